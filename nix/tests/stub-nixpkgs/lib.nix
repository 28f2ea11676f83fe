# nixpkgs' `lib` as far as flake.nix, nix/package.nix and nix/checks.nix use it (offline stand-in).
let
  stub = import ../stub-lib.nix;
in
stub.lib
// {
  genAttrs = names: f: builtins.listToAttrs (builtins.map (n: { name = n; value = f n; }) names);
  getExe = p: "${p.outPath}/bin/${p.meta.mainProgram}";
  optionals = cond: list: if cond then list else [ ];
  optionalAttrs = cond: set: if cond then set else { };
  importTOML = path: builtins.fromTOML (builtins.readFile path);
  licenses.asl20 = "Apache-2.0";
  platforms = {
    linux = [ "x86_64-linux" "aarch64-linux" ];
    darwin = [ "x86_64-darwin" "aarch64-darwin" ];
  };
  fileset = {
    unions = paths: paths;
    toSource = { root, fileset }: assert builtins.all builtins.pathExists fileset; { inherit root fileset; };
  };
}
