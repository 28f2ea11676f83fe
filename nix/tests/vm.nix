# NixOS VM test (pkgs.testers.runNixOSTest): the module's socket-activated daemon, one session
# driven through zeroclaw-acp-bridge against a loopback model server in a project under the
# packaged projects root (another opens under an extra root), and an escape attempt by the
# model (read /etc/shadow, write /etc) that the sandbox must deny.
#
# Run on a Linux machine with KVM and network access to nixpkgs:  nix build .#checks.x86_64-linux.vm
# It has never run where it was written (no nixpkgs, no KVM there); see packaging/README.md.
{ self, pkgs }:

let
  # An OpenAI-compatible /chat/completions that replays scripted SSE: a tool call when the
  # user asks to "escape", a closing text after a tool result, else a greeting.
  modelServer = pkgs.writers.writePython3 "zeroclaw-vm-model" { flakeIgnore = [ "E501" ]; } ''
    import json
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
                    "function": {"name": "shell",
                                 "arguments": json.dumps(SHELL_CALL)}}
            return [chunk({"tool_calls": [call]}), chunk({}, "tool_calls")]
        return [chunk({"content": "hello from the VM"}), chunk({}, "stop")]


    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers["Content-Length"])
            body = json.loads(self.rfile.read(length))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in script(body["messages"]) + ["data: [DONE]\n\n"]:
                self.wfile.write(event.encode())


    ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
  '';

  # Drives zeroclaw-acp-bridge over stdio like an editor; prints every message it received.
  driver = pkgs.writers.writePython3 "zeroclaw-vm-driver" { flakeIgnore = [ "E501" ]; } ''
    import json
    import subprocess
    import sys

    bridge = subprocess.Popen(
        ["zeroclaw-acp-bridge", "--config-dir", "/etc/zeroclaw"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    seen = []


    def send(msg):
        bridge.stdin.write(json.dumps(msg) + "\n")
        bridge.stdin.flush()


    def allow(request):
        options = request["params"]["options"]
        chosen = next(o for o in options if o["kind"].startswith("allow"))
        outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
        send({"jsonrpc": "2.0", "id": request["id"],
              "result": {"outcome": outcome}})


    def call(id_, method, params):
        send({"jsonrpc": "2.0", "id": id_, "method": method,
              "params": params})
        for line in bridge.stdout:
            msg = json.loads(line)
            seen.append(msg)
            if msg.get("method") == "session/request_permission":
                allow(msg)
            elif msg.get("id") == id_ and "method" not in msg:
                if "error" in msg:
                    sys.exit(f"{method} failed: {msg['error']}")
                return msg["result"]
        sys.exit(f"bridge closed during {method}")


    call(1, "initialize", {"protocolVersion": 1})
    # A project in the packaged projects root, and one in an extra root (extraProjectRoots).
    session = call(2, "session/new", {"cwd": "/var/lib/zeroclaw-projects/demo", "mcpServers": []})
    sid = session["sessionId"]
    call(5, "session/new", {"cwd": "/srv/work/other", "mcpServers": []})
    hello = call(3, "session/prompt", {"sessionId": sid, "prompt": "say hello"})
    assert "hello from the VM" in json.dumps(hello), hello
    call(4, "session/prompt", {"sessionId": sid, "prompt": "escape now"})
    bridge.stdin.close()
    bridge.wait()
    print(json.dumps(seen))
  '';
in
{
  name = "zeroclaw-socket-activation";

  nodes.machine =
    { ... }:
    {
      imports = [ self.nixosModules.default ];
      virtualisation.memorySize = 2048;

      services.zeroclaw = {
        enable = true;
        settings = {
          providers.mock = {
            kind = "openai";
            base_url = "http://127.0.0.1:8080/v1";
          };
          agents.default = {
            provider = "mock";
            model = "scripted";
          };
        };
        extraProjectRoots = [ "/srv/work" ];
      };
      systemd.tmpfiles.rules = [
        "d /var/lib/zeroclaw-projects/demo 0770 zeroclaw zeroclaw -"
        "d /srv/work 0770 zeroclaw zeroclaw -"
        "d /srv/work/other 0770 zeroclaw zeroclaw -"
      ];

      systemd.services.model-server = {
        wantedBy = [ "multi-user.target" ];
        serviceConfig.ExecStart = modelServer;
      };
      environment.systemPackages = [ driver ];
    };

  testScript = ''
    import json

    machine.wait_for_unit("sockets.target")
    machine.wait_for_unit("zeroclaw.socket")
    machine.wait_for_unit("model-server.service")
    machine.wait_for_open_port(8080)
    machine.succeed("test -S /run/zeroclaw/acp.sock")
    # Socket-activated: nothing runs before the first connection.
    machine.fail("systemctl is-active zeroclaw.service")

    with subtest("a session through the bridge, and the escape attempt denied"):
        seen = json.loads(machine.succeed("zeroclaw-vm-driver"))
        machine.succeed("systemctl is-active zeroclaw.service")
        updates = [m["params"]["update"] for m in seen
                   if m.get("method") == "session/update"]
        results = [u for u in updates
                   if u.get("sessionUpdate") == "tool_call_update"]
        assert results, f"no tool_call_update in {updates}"
        shadow = machine.succeed("cut -d: -f2 /etc/shadow | grep -v '^[!*]*$' || true")
        for line in shadow.split():
            assert line not in json.dumps(seen), "a password hash reached the client"
        assert "root:" not in json.dumps(results), "the tool read /etc/shadow"
        machine.fail("test -e /etc/zeroclaw-pwned")

    with subtest("the socket survives a restart of the service"):
        machine.succeed("systemctl restart zeroclaw.service")
        machine.succeed("test -S /run/zeroclaw/acp.sock")
        machine.succeed("systemctl stop zeroclaw.service")
        machine.succeed("test -S /run/zeroclaw/acp.sock")

    with subtest("the hardening the packaged unit promises"):
        print(machine.succeed("systemd-analyze security --threshold=30 zeroclaw.service"))
  '';
}
