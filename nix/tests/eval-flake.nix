# Offline evaluation of flake.nix's outputs against nix/tests/stub-nixpkgs (no nixpkgs here):
#
#   nix-instantiate --eval --strict --json nix/tests/eval-flake.nix
#
# Asserts the outputs the issue asks for exist on every system, with the right shape, and
# prints their names. It cannot build anything; `nix flake check` does that.
let
  flake = import ../../flake.nix;
  nixpkgs = {
    lib = import ./stub-nixpkgs/lib.nix;
    outPath = ./stub-nixpkgs;
  };
  self = flake.outputs { inherit self nixpkgs; };
  systems = builtins.attrNames self.packages;
  linux = "x86_64-linux";
  pkgs = import ./stub-nixpkgs { system = linux; };
  image = self.packages.${linux}.image;
  cargoVersion = (builtins.fromTOML (builtins.readFile ../../Cargo.toml)).workspace.package.version;
  envValue =
    name:
    let
      m = builtins.filter (e: builtins.match "${name}=.*" e != null) image.config.Env;
    in
    if m == [ ] then null else builtins.substring (builtins.stringLength name + 1) (-1) (builtins.head m);
  module = self.nixosModules.default {
    inherit pkgs;
    inherit (nixpkgs) lib;
  };
  checks = [
    {
      ok = systems == [ "aarch64-darwin" "aarch64-linux" "x86_64-darwin" "x86_64-linux" ];
      what = "packages for Linux and macOS";
    }
    {
      ok = builtins.all (s: self.packages.${s}.default.pname == "zeroclaw") systems;
      what = "packages.<system>.default is zeroclaw";
    }
    {
      ok = builtins.all (s: (self.packages.${s} ? image) == (builtins.match ".*-linux" s != null)) systems;
      what = "packages.<system>.image on Linux only";
    }
    {
      ok =
        image._builder == "buildLayeredImage"
        && image.name == "zeroclaw"
        && image.tag == cargoVersion
        && image.config.Labels."org.opencontainers.image.version" == cargoVersion;
      what = "the image is dockerTools.buildLayeredImage zeroclaw:<Cargo.toml's version>";
    }
    {
      ok =
        builtins.all (p: builtins.elem p.outPath (builtins.map (c: c.outPath) image.contents)) [
          self.packages.${linux}.default
          pkgs.bubblewrap
          pkgs.git
        ];
      what = "the image holds the package, bubblewrap and git";
    }
    {
      ok =
        builtins.match "[0-9]+:[0-9]+" image.config.User != null
        && image.config.User != "0:0"
        && builtins.match ".*chown ${image.config.User} [^\n]*${envValue "ZEROCLAW_workspace_dir"}[^\n]*\n.*" image.fakeRootCommands != null;
      what = "the image runs as a numeric non-root user that owns workspace_dir";
    }
    {
      ok = builtins.all (s: self.apps.${s}.default.type == "app" && builtins.isString self.apps.${s}.default.program) systems;
      what = "apps.<system>.default is an app (nix run)";
    }
    {
      ok = builtins.all (s: builtins.any (p: (p.pname or null) == "zeroclaw") self.devShells.${s}.default.inputsFrom) systems;
      what = "devShells.<system>.default builds on the package's inputs";
    }
    {
      ok = builtins.attrNames self.checks.${linux} == [ "build" "clippy" "fmt" "tests" "vm" ];
      what = "checks on Linux: build, clippy, fmt, tests, vm";
    }
    {
      ok = !(self.checks.aarch64-darwin ? vm);
      what = "no NixOS VM test on macOS";
    }
    {
      ok = self.checks.${linux}.tests.doCheck && !self.packages.${linux}.default.doCheck;
      what = "the tests check runs the test suite, the package build does not";
    }
    {
      ok = builtins.match ".*cargo clippy --workspace --all-targets.*-D warnings.*" self.checks.${linux}.clippy.buildPhase != null;
      what = "the clippy check denies warnings";
    }
    {
      ok = self.checks.${linux}.vm.test.name == "zeroclaw-socket-activation" && builtins.isFunction self.checks.${linux}.vm.test.nodes.machine;
      what = "the VM test is a runNixOSTest with a machine";
    }
    {
      ok = module.imports == [ ../module.nix ] && module.services.zeroclaw.package.content.pname == "zeroclaw";
      what = "nixosModules.default imports nix/module.nix and defaults the package to the flake's";
    }
    {
      ok = (self.overlays.default pkgs pkgs).zeroclaw.pname == "zeroclaw";
      what = "overlays.default adds pkgs.zeroclaw";
    }
    {
      ok = builtins.all (s: self.formatter.${s}._builder == "nixfmt-rfc-style") systems;
      what = "formatter is nixfmt";
    }
  ];
  failed = builtins.filter (c: !c.ok) checks;
in
if failed != [ ] then
  throw "eval-flake: ${builtins.concatStringsSep "\n  " (builtins.map (c: c.what) failed)}"
else
  {
    passed = builtins.map (c: c.what) checks;
    # For deploy/kubernetes/check.sh: the image the manifests must name, and its layout.
    image = {
      inherit (image) name tag;
      user = image.config.User;
      workspaceDir = envValue "ZEROCLAW_workspace_dir";
    };
  }
