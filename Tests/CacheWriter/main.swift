// A child process for the disk cache tests: writes entries to a cache directory in a loop until
// it is killed, so a test can kill it mid-write and check that the directory stays valid.
//
//     courier-cache-writer <directory> <keys> <body bytes> [<parent pid>]
//
// Each body is the key's index and a write counter repeated to the requested length, so a reader
// can tell a whole entry from a torn one. Prints "ready" once the first entry is written.
//
// Exits once its parent (the given pid, else the one it had at start) is gone, after its first
// entry: a test process that crashed before killing it would otherwise leave it writing
// forever. The pid is given by its spawner so that a parent that died during the writer's
// start-up is noticed too.
import CourierCaching
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4 || arguments.count == 5, let keys = Int(arguments[2]), let size = Int(arguments[3]),
    let parent = arguments.count == 5 ? Int32(arguments[4]) : getppid()
else {
    FileHandle.standardError.write(
        Data("usage: courier-cache-writer <directory> <keys> <body bytes> [<parent pid>]\n".utf8))
    exit(2)
}
let cache = try DiskCache(directory: arguments[1], options: .init(sizeLimit: 1 << 30))
var counter = 0
repeat {
    let index = counter % keys
    let body = CacheWriterBody.make(key: index, version: counter, size: size)
    let response = CachedResponse(
        status: 200, headerFields: [.contentType: "application/octet-stream"], body: body, requestTime: Date(),
        responseTime: Date())
    try await cache.store(response, for: CacheKey("GET http://writer/\(index)"))
    if counter == 0 {
        FileHandle.standardOutput.write(Data("ready\n".utf8))
    }
    counter += 1
} while getppid() == parent

enum CacheWriterBody {
    static func make(key: Int, version: Int, size: Int) -> Data {
        let unit = Array("\(key):\(version);".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(size)
        while bytes.count < size { bytes.append(unit[bytes.count % unit.count]) }
        return Data(bytes)
    }
}
