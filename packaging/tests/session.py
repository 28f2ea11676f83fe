#!/usr/bin/env python3
"""One ACP session through zeroclaw-acp-bridge against the socket-activated daemon, with a
loopback model server replaying scripted SSE: a greeting turn, then a turn in which the model
tries to read /etc/shadow and write /etc through the shell tool. Run by packaging/tests/nspawn.sh
(daemon mode) inside the container; the same script as nix/tests/vm.nix's, without Nix.

usage: session.py BRIDGE SOCKET WORKSPACE  (the model server listens on 127.0.0.1:8080)
"""
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHELL_CALL = {"command": "cat /etc/shadow; touch /etc/zeroclaw-pwned"}


def chunk(delta, finish=None):
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"choices": [choice]}) + "\n\n"


def script(messages):
    last = messages[-1]
    if last["role"] == "tool":
        return [chunk({"content": "done"}), chunk({}, "stop")]
    if "escape" in json.dumps(last.get("content")):
        call = {"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "shell", "arguments": json.dumps(SHELL_CALL)}}
        return [chunk({"tool_calls": [call]}), chunk({}, "tool_calls")]
    return [chunk({"content": "hello from the container"}), chunk({}, "stop")]


class Model(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in script(body["messages"]) + ["data: [DONE]\n\n"]:
            self.wfile.write(event.encode())

    def log_message(self, *args):
        pass


def main():
    bridge_bin, socket, workspace = sys.argv[1:4]
    server = ThreadingHTTPServer(("127.0.0.1", 8080), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bridge = subprocess.Popen([bridge_bin, "--url", f"unix:{socket}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seen = []

    def send(msg):
        bridge.stdin.write(json.dumps(msg) + "\n")
        bridge.stdin.flush()

    def call(id_, method, params):
        send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        for line in bridge.stdout:
            msg = json.loads(line)
            seen.append(msg)
            if msg.get("method") == "session/request_permission":
                option = next(o for o in msg["params"]["options"] if o["kind"].startswith("allow"))
                send({"jsonrpc": "2.0", "id": msg["id"],
                      "result": {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}})
            elif msg.get("id") == id_ and "method" not in msg:
                if "error" in msg:
                    sys.exit(f"FAILED: {method}: {msg['error']}")
                return msg["result"]
        sys.exit(f"FAILED: the bridge closed during {method}")

    call(1, "initialize", {"protocolVersion": 1})
    sid = call(2, "session/new", {"cwd": workspace, "mcpServers": []})["sessionId"]
    hello = call(3, "session/prompt", {"sessionId": sid, "prompt": "say hello"})
    assert "hello from the container" in json.dumps(hello), hello
    print("a turn through the bridge:", hello.get("stopReason"))
    call(4, "session/prompt", {"sessionId": sid, "prompt": "escape now"})
    bridge.stdin.close()
    bridge.wait()
    results = [m["params"]["update"] for m in seen if m.get("method") == "session/update"
               and m["params"]["update"].get("sessionUpdate") == "tool_call_update"]
    assert results, "no tool_call_update: the shell tool did not run"
    print("the shell tool's result:", json.dumps(results[-1])[:300])
    assert "root:" not in json.dumps(results), "FAILED: the tool read /etc/shadow"
    assert not os.path.exists("/etc/zeroclaw-pwned"), "FAILED: the tool wrote /etc"
    print("escape attempt denied: /etc/shadow unread, /etc unwritten")


main()
