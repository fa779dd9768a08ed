import Foundation
import Glibc

/// The soak's fault server as a child process: started with `--fault-server SEED`, it prints
/// `port N`, serves until its standard input closes (also when this process dies), then
/// prints its ``FaultServerCounts`` as one JSON line and exits.
final class FaultServerProcess {
    let port: Int
    private let process: Process
    private let input: Pipe
    private let output: Pipe

    var base: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, process: Process, input: Pipe, output: Pipe) {
        self.port = port
        self.process = process
        self.input = input
        self.output = output
    }

    static func start(seed: UInt64) throws -> FaultServerProcess {
        let child = try LoopbackServer.startChild(["--fault-server", "\(seed)"], name: "the fault server")
        return FaultServerProcess(port: child.port, process: child.process, input: child.input, output: child.output)
    }

    /// Closes the server's input, waits for it to exit and returns what it counted.
    func stop() throws -> FaultServerCounts {
        try input.fileHandleForWriting.close()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let line = String(decoding: rest, as: UTF8.self).split(separator: "\n").last,
            let counts = try? JSONDecoder().decode(FaultServerCounts.self, from: Data(line.utf8))
        else { throw BenchError("the fault server exited with \(process.terminationStatus) and no counts") }
        return counts
    }
}

/// The child's side: serves until standard input reaches its end.
func runFaultServer(seed: UInt64) throws -> Never {
    signal(SIGPIPE, SIG_IGN)
    let server = try FaultServer(seed: seed)
    server.start()
    FileHandle.standardOutput.write(Data("port \(server.port)\n".utf8))
    var byte: UInt8 = 0
    while read(STDIN_FILENO, &byte, 1) != 0 {}
    let counts = try JSONEncoder().encode(server.snapshot)
    FileHandle.standardOutput.write(counts + Data("\n".utf8))
    exit(0)
}
