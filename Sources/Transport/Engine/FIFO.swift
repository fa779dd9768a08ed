/// A first-in, first-out queue over an array: append at the back, remove at the front in
/// amortised constant time (the consumed prefix is dropped once it is half the storage).
struct FIFO<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func removeFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        storage[head] = nil
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 1024)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Calls `body` with each element still queued, oldest first.
    func forEachQueued(_ body: (Element) -> Void) {
        for index in head..<storage.count { if let element = storage[index] { body(element) } }
    }
}

extension FIFO: Sendable where Element: Sendable {}
