/// One step of a coding path, linked to its parent: pushing a key costs one small allocation
/// and no array copy; the `[any CodingKey]` is built only when asked for (errors, mostly).
final class CodingPathNode {
    enum Step {
        case key(any CodingKey)
        /// An array position: its key (`"Index 3"`) is made only when the path is read.
        case index(Int)
    }

    let parent: CodingPathNode?
    let step: Step

    init(parent: CodingPathNode?, step: Step) {
        self.parent = parent
        self.step = step
    }

    convenience init(parent: CodingPathNode?, key: any CodingKey) {
        self.init(parent: parent, step: .key(key))
    }

    var key: any CodingKey {
        switch step {
        case .key(let key): key
        case .index(let index): JSONKey(index: index)
        }
    }
}

/// A coding path whose last step has no node yet: values that keep no container (strings,
/// numbers, dates, arrays of them) never make one.
struct PendingPath {
    var parent: CodingPathNode?
    var step: CodingPathNode.Step?

    func node() -> CodingPathNode? {
        guard let step else { return parent }
        return CodingPathNode(parent: parent, step: step)
    }
}

extension CodingPathNode? {
    /// The path from the root.
    var components: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while let step = node {
            keys.append(step.key)
            node = step.parent
        }
        return keys.reversed()
    }

    /// The path from the root, then `key`.
    func appending(_ key: any CodingKey) -> [any CodingKey] { components + [key] }

    /// The path from the root, then `step`.
    func appending(_ step: CodingPathNode.Step) -> [any CodingKey] {
        Optional(CodingPathNode(parent: self, step: step)).components
    }
}

/// The keys the decoder makes itself: array positions (`"Index 3"`, as Foundation names
/// them), key path steps, and keys handed to custom key strategies.
struct JSONKey: CodingKey, Sendable {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    static let `super` = JSONKey(stringValue: "super")
}
