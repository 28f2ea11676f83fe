# A small streamable-HTTP MCP server for the tests, on loopback: prints its port, answers
# POST /mcp with JSON (one tool, `hello`, which echoes the X-Zc header it was sent), and
# counts nothing else. Answers are plain JSON; notifications get 202.
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(405)
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        message = json.loads(body)
        ident = message.get("id")
        if ident is None:
            self.send_response(202)
            self.end_headers()
            return
        method = message.get("method")
        if method == "initialize":
            version = message["params"].get("protocolVersion", "2025-06-18")
            result = {"protocolVersion": version, "capabilities": {"tools": {}},
                      "serverInfo": {"name": "zc-http", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "hello", "description": "says hello",
                                 "inputSchema": {"type": "object"},
                                 "annotations": {"readOnlyHint": True, "openWorldHint": True}}]}
        elif method == "tools/call":
            header = self.headers.get("x-zc", "-")
            session = self.headers.get("mcp-session-id", "-")
            text = "hello over http; x-zc=%s; session=%s" % (header, session)
            result = {"content": [{"type": "text", "text": text}]}
        else:
            self.reply({"jsonrpc": "2.0", "id": ident,
                        "error": {"code": -32601, "message": "unknown method"}})
            return
        self.reply({"jsonrpc": "2.0", "id": ident, "result": result}, method == "initialize")

    def reply(self, message, new_session=False):
        data = json.dumps(message).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if new_session:
            self.send_header("mcp-session-id", "zc-session-1")
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
