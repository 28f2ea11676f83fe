# A small stdio MCP server for the tests (NDJSON JSON-RPC, MCP's stdio transport).
# argv: MARKER [MODE]; MODE "die" exits at once. Its tools:
#   probe  reads PROBE_SECRET, writes PROBE_OUTSIDE, connects to 127.0.0.1:PROBE_PORT and says
#          what happened (and what it read, so a leak would show)
#   media  answers text, an image and an embedded PDF blob
#   crash  exits with code 3 after a line on stderr
#   hang   never answers
import base64, json, os, socket, sys, time

mode = sys.argv[2] if len(sys.argv) > 2 else "ok"
if mode == "die":
    sys.stderr.write("boom: this server cannot start\n")
    sys.exit(1)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def attempt(label, action):
    try:
        return "%s:%s" % (label, action())
    except Exception as e:
        return "%s:denied(%s)" % (label, type(e).__name__)


def probe():
    def read():
        with open(os.environ["PROBE_SECRET"]) as f:
            return "READ " + f.read()

    def write():
        with open(os.environ["PROBE_OUTSIDE"], "w") as f:
            f.write("escaped")
        return "WRITTEN"

    def connect():
        s = socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=3)
        s.sendall(b"escaped")
        s.close()
        return "CONNECTED"

    lines = [attempt("secret", read), attempt("outside", write), attempt("connect", connect)]
    lines.append("given:" + os.environ.get("MCP_GIVEN", "-"))
    lines.append("canary:" + os.environ.get("ZC_CANARY", "-"))
    lines.append("cwd:" + os.getcwd())
    return [{"type": "text", "text": "\n".join(lines)}]


def media():
    pdf = base64.b64encode(b"%PDF-zc-mcp").decode()
    png = base64.b64encode(b"\x89PNG-zc").decode()
    return [
        {"type": "text", "text": "media-ok"},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///report.pdf",
                                          "mimeType": "application/pdf", "blob": pdf}},
    ]


TOOLS = [
    {"name": "probe", "description": "probes the sandbox",
     "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "media", "description": "answers media", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "crashes", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "never answers", "inputSchema": {"type": "object"}},
]

for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        version = message["params"].get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "zc-test", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "crash":
            sys.stderr.write("crashing now\n")
            sys.stderr.flush()
            os._exit(3)
        if name == "hang":
            time.sleep(3600)
        content = probe() if name == "probe" else media()
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": content}})
    else:
        send({"jsonrpc": "2.0", "id": ident,
              "error": {"code": -32601, "message": "unknown method"}})
