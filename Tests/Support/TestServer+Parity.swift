import NIOCore
import NIOHTTP1

/// Routes for backends, lossy collections and XML:
///
/// - `/rss`: an RSS 2.0 feed with three items (namespaces, attributes, CDATA, repeated elements).
/// - `/problem?status=&message=`: `{"error": {"code": "invalid", "message": message}}` with `status`.
/// - `/snake`: `{"product_name": "Widget", "unit_price": 12}`.
/// - `/lossy`: a JSON array of four products, two of them malformed (indices 1 and 2).
extension TestServer {
    func parityRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        switch request.path {
        case "/rss":
            out.send(200, headers: [("Content-Type", "application/rss+xml; charset=utf-8")], body: Array(Self.rss.utf8))
        case "/problem":
            let message = request.query("message") ?? "Something went wrong"
            let body = #"{"error": {"code": "invalid", "message": "\#(message)"}}"#
            out.send(
                request.intQuery("status", default: 422), "Problem", headers: [("Content-Type", "application/json")],
                body: Array(body.utf8))
        case "/snake":
            out.send(
                200, headers: [("Content-Type", "application/json")],
                body: Array(#"{"product_name": "Widget", "unit_price": 12}"#.utf8))
        case "/lossy":
            let body =
                #"[{"id": 1, "name": "first"}, {"id": "two", "name": "second"}, {"id": 3}, {"id": 4, "name": "fourth"}]"#
            out.send(200, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
        default:
            return false
        }
        return true
    }

    static let rss = """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
          <channel>
            <title>Courier News</title>
            <link>https://example.com/</link>
            <description>Releases and notes</description>
            <atom:link href="https://example.com/feed.xml" rel="self" type="application/rss+xml"/>
            <item>
              <title>Caching lands</title>
              <link>https://example.com/posts/caching</link>
              <guid isPermaLink="true">https://example.com/posts/caching</guid>
              <pubDate>Sun, 22 Nov 2026 12:00:00 GMT</pubDate>
              <description><![CDATA[Memory & disk <b>tiers</b>]]></description>
              <category>release</category>
              <category>caching</category>
            </item>
            <item>
              <title>Testing doubles</title>
              <link>https://example.com/posts/testing</link>
              <guid isPermaLink="false">post-2</guid>
              <pubDate>Sat, 21 Nov 2026 09:30:00 GMT</pubDate>
              <description>Fixtures &amp; HAR replay</description>
              <category>release</category>
            </item>
            <item>
              <title>Transport notes</title>
              <link>https://example.com/posts/transport</link>
              <guid isPermaLink="false">post-3</guid>
              <pubDate>Fri, 20 Nov 2026 18:00:00 GMT</pubDate>
              <description>One loop, many transfers</description>
            </item>
          </channel>
        </rss>
        """
}
