# zeroclaw as a Nix flake: the package (both binaries and the systemd units), the container
# image (Linux: `nix build .#image`, the image deploy/kubernetes deploys), `nix run` for
# `zeroclaw acp`, a development shell, checks (build, clippy, fmt, tests, the NixOS VM test),
# the NixOS module `services.zeroclaw`, an overlay and the formatter.
#
# No flake.lock is committed: it was written where nixpkgs cannot be fetched. The first
# `nix flake lock` (or any flake command) on a networked machine creates it; commit it then.
{
  description = "zeroclaw: a hardened agent host driven over ACP";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];
      forAllSystems =
        f:
        lib.genAttrs systems (
          system:
          f (
            import nixpkgs {
              inherit system;
              overlays = [ self.overlays.default ];
            }
          )
        );
    in
    {
      overlays.default = final: _prev: { zeroclaw = final.callPackage ./nix/package.nix { }; };

      packages = forAllSystems (
        pkgs:
        {
          default = pkgs.zeroclaw;
          zeroclaw = pkgs.zeroclaw;
        }
        // lib.optionalAttrs pkgs.stdenv.isLinux { image = pkgs.callPackage ./nix/image.nix { }; }
      );

      apps = forAllSystems (pkgs: {
        default = {
          type = "app";
          program = toString (
            pkgs.writeShellScript "zeroclaw-acp" ''exec ${lib.getExe pkgs.zeroclaw} acp "$@"''
          );
          meta.description = "zeroclaw acp: the ACP server on stdio";
        };
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ pkgs.zeroclaw ];
          packages = [
            pkgs.clippy
            pkgs.rustfmt
            pkgs.rust-analyzer
            pkgs.cargo-deb
            pkgs.nixfmt-rfc-style
          ]
          ++ lib.optionals pkgs.stdenv.isLinux [
            pkgs.bubblewrap
            pkgs.systemd
          ];
        };
      });

      checks = forAllSystems (pkgs: import ./nix/checks.nix { inherit pkgs self; });

      nixosModules.default =
        { pkgs, lib, ... }:
        {
          imports = [ ./nix/module.nix ];
          services.zeroclaw.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
        };

      formatter = forAllSystems (pkgs: pkgs.nixfmt-rfc-style);
    };
}
