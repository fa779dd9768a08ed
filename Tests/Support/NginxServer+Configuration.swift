import Foundation

extension NginxServer {
    /// nginx's configuration: every path inside `directory` (pid, logs, temp files), two
    /// `ssl http2` listeners (see ``NginxServer``). `listen ... http2` is the nginx 1.22
    /// spelling (Debian 12); 1.25 deprecates it for `http2 on;` but still accepts it.
    static func configuration(directory: String, ports: (main: Int, goAway: Int)) -> String {
        let routes = """
                    default_type text/plain;
                    location /echo/ { return 200 "$server_protocol $connection $connection_requests $request_uri"; }
                    location = /json {
                        default_type application/json;
                        return 200 '{"name":"courier","protocol":"$server_protocol"}';
                    }
                    location = /reset { return 444; }
                    location = /events {
                        default_type text/event-stream;
                        return 200 "id: 7\nevent: hello\ndata: $server_protocol\n\n";
                    }
            """
        return """
            worker_processes 1;
            daemon off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                client_body_temp_path \(directory)/temp/body;
                proxy_temp_path \(directory)/temp/proxy;
                fastcgi_temp_path \(directory)/temp/fastcgi;
                uwsgi_temp_path \(directory)/temp/uwsgi;
                scgi_temp_path \(directory)/temp/scgi;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server-key.pem;
                ssl_protocols TLSv1.2 TLSv1.3;
                http2_max_concurrent_streams 128;
                keepalive_requests 10000;
                # A `return` may answer before the request body has arrived; nginx then reads the
                # rest and drops it, and by default closes the connection after 5 s without a
                # byte (lingering_timeout) or 30 s in all (lingering_time). A streamed body whose
                # producer waited that long for a thread of the cooperative pool (two tests
                # blocking it, on 2 cores) then failed with EPIPE: allow minutes instead.
                lingering_timeout 120s;
                lingering_time 300s;
                server {
                    listen 127.0.0.1:\(ports.main) ssl http2;
            \(routes)
                }
                server {
                    listen 127.0.0.1:\(ports.goAway) ssl http2;
                    keepalive_requests \(requestsBeforeGoAway);
            \(routes)
                }
            }
            """
    }

    /// Makes a test certificate authority and a server certificate it signs, valid for
    /// 127.0.0.1 and localhost, in `directory`; returns the authority's PEM file.
    static func makeCertificates(in directory: String) throws -> String {
        let script = """
            set -e
            cd "$0"
            exec >openssl.log 2>&1
            curve="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $curve -keyout ca-key.pem -out ca.pem -days 2 -subj '/CN=Courier Test CA' \
                -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'
            openssl req $curve -keyout server-key.pem -out server.csr -subj '/CN=127.0.0.1'
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' \
                > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
                -extfile server.ext -out server.pem
            """
        let openssl = try ChildProcess.spawn("/bin/sh", ["-c", script, directory])
        guard openssl.wait() == 0 else {
            let log = (try? String(contentsOfFile: directory + "/openssl.log", encoding: .utf8)) ?? ""
            throw NginxServerError.commandFailed("openssl: " + log)
        }
        return directory + "/ca.pem"
    }
}
