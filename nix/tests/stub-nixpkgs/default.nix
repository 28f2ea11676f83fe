# A stand-in for `import nixpkgs { system; overlays; }`, just wide enough for flake.nix and
# nix/checks.nix to evaluate offline (nix/tests/eval-flake.nix). Builders return their
# arguments tagged with what built them; nothing is built.
{
  system,
  overlays ? [ ],
}:
let
  stub = import ../stub-lib.nix;
  drv = kind: args: args // { _builder = kind; outPath = "/nix/store/stub-${kind}"; };
  base = final: {
    inherit system;
    lib = import ./lib.nix;
    stdenv = {
      isLinux = builtins.match ".*-linux" system != null;
      hostPlatform.system = system;
    };
    callPackage = f: extra: (import f) (builtins.intersectAttrs (builtins.functionArgs (import f)) final // extra);
    rustPlatform.buildRustPackage = args: drv "buildRustPackage" (args // {
      overrideAttrs = f: drv "buildRustPackage" (args // (if builtins.isFunction f then f args else f));
    });
    writeShellScript = name: text: drv "writeShellScript" { inherit name text; };
    mkShell = args: drv "mkShell" args;
    testers.runNixOSTest = test: drv "runNixOSTest" { inherit test; };
    dockerTools = {
      buildLayeredImage = args: drv "buildLayeredImage" args;
      binSh = drv "binSh" { };
      caCertificates = drv "caCertificates" { };
    };
    formats = stub.pkgs.formats;
  } // builtins.listToAttrs (builtins.map (n: { name = n; value = drv n { }; }) [
    "bubblewrap" "git" "python3" "util-linux" "clippy" "rustfmt" "rust-analyzer" "cargo-deb"
    "nixfmt-rfc-style" "systemd" "coreutils" "bashInteractive"
  ]);
  pkgs = builtins.foldl' (acc: overlay: acc // overlay pkgs acc) (base pkgs) overlays;
in
pkgs
