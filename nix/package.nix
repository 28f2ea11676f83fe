# zeroclaw as a Nix package: both binaries, plus the systemd units, sysusers.d and tmpfiles.d
# files from packaging/ (the same files the Debian package ships), with ExecStart pointing into
# the store. Called from flake.nix (overlay `zeroclaw`).
{
  lib,
  rustPlatform,
  bubblewrap,
  git,
  python3,
  util-linux,
}:

let
  cargoToml = lib.importTOML ../Cargo.toml;
in
rustPlatform.buildRustPackage {
  pname = "zeroclaw";
  inherit (cargoToml.workspace.package) version;

  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../Cargo.toml
      ../Cargo.lock
      ../src
      ../sandbox
      ../tests
      ../benches
      ../packaging
    ];
  };
  cargoLock.lockFile = ../Cargo.lock;

  # The test suite drives the real binaries; its sandbox tests need unprivileged user
  # namespaces and skip with a printed reason where the builder has none. `checks.tests` in
  # flake.nix turns the tests on; a plain `nix build` does not run them.
  doCheck = false;
  nativeCheckInputs = [
    bubblewrap
    git
    python3
  ];

  postInstall = ''
    install -Dm644 -t $out/lib/systemd/system \
      packaging/systemd/zeroclaw.service \
      packaging/systemd/zeroclaw.socket \
      packaging/systemd/zeroclaw-tcp.socket
    substituteInPlace $out/lib/systemd/system/zeroclaw.service \
      --replace-fail /usr/bin/zeroclaw $out/bin/zeroclaw \
      --replace-fail /bin/kill ${util-linux}/bin/kill
    install -Dm644 packaging/sysusers.d/zeroclaw.conf $out/lib/sysusers.d/zeroclaw.conf
    install -Dm644 packaging/tmpfiles.d/zeroclaw.conf $out/lib/tmpfiles.d/zeroclaw.conf
    install -Dm644 -t $out/share/doc/zeroclaw packaging/config.example.toml packaging/README.md
  '';

  meta = {
    description = "A hardened agent host: ACP over stdio and WebSocket, every tool execution confined";
    homepage = "https://github.com/zeroclaw/zeroclaw";
    license = lib.licenses.asl20;
    mainProgram = "zeroclaw";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
