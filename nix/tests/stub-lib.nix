# A small stand-in for the parts of nixpkgs' `lib` and `pkgs` that nix/module.nix uses, so the
# module can be evaluated where there is no nixpkgs (CI: Debian's nix-bin, no network).
#
# It keeps the module system's shapes: options are `{ _type = "option"; ... }`, mkIf/mkMerge/
# mkDefault are markers that `resolve` pushes through the way NixOS does for one module. Types
# carry a `check` so the test configuration is type-checked. A function the module starts to
# use that is missing here fails the evaluation: extend the stub, do not bypass it.
let
  isType = t: v: builtins.isAttrs v && (v._type or null) == t;

  mkType = name: check: { inherit name check; };

  types = {
    str = mkType "str" builtins.isString;
    bool = mkType "bool" builtins.isBool;
    package = mkType "package" (v: builtins.isAttrs v && v ? outPath);
    path = mkType "path" (v: builtins.isPath v || (builtins.isString v && builtins.substring 0 1 v == "/"));
    listOf = t: mkType "listOf ${t.name}" (v: builtins.isList v && builtins.all t.check v);
    enum = values: mkType "one of ${builtins.concatStringsSep ", " values}" (v: builtins.elem v values);
    nullOr = t: mkType "nullOr ${t.name}" (v: v == null || t.check v);
  };

  # Drops what a false mkIf guards, unwraps mkDefault, merges mkMerge: what NixOS hands on to
  # the unit renderer for a single module.
  resolve =
    v:
    if isType "if" v then
      (if v.condition then resolve v.content else { _type = "absent"; })
    else if isType "override" v then
      resolve v.content
    else if isType "merge" v then
      builtins.foldl' (acc: c: recursiveUpdate acc (resolve c)) { } v.contents
    else if builtins.isAttrs v && !(v ? outPath) then
      let
        resolved = builtins.mapAttrs (_: resolve) v;
      in
      removeAttrsBy (_: x: isType "absent" x) resolved
    else if builtins.isList v then
      builtins.map resolve v
    else
      v;

  removeAttrsBy =
    pred: set:
    builtins.removeAttrs set (builtins.filter (n: pred n set.${n}) (builtins.attrNames set));

  recursiveUpdate =
    a: b:
    a
    // builtins.mapAttrs (
      n: v: if builtins.isAttrs v && builtins.isAttrs (a.${n} or null) && !(v ? outPath) then recursiveUpdate a.${n} v else v
    ) b;

  lib = {
    inherit types recursiveUpdate;
    mkOption = attrs: attrs // { _type = "option"; };
    mkEnableOption = description: {
      _type = "option";
      type = types.bool;
      default = false;
      inherit description;
    };
    mkIf = condition: content: {
      _type = "if";
      inherit condition content;
    };
    mkMerge = contents: {
      _type = "merge";
      inherit contents;
    };
    mkDefault = content: {
      _type = "override";
      priority = 1000;
      inherit content;
    };
    literalExpression = text: {
      _type = "literalExpression";
      inherit text;
    };
    any = builtins.any;
    concatMapStrings = f: list: builtins.concatStringsSep "" (builtins.map f list);
    filter = builtins.filter;
    hasPrefix = prefix: s: builtins.substring 0 (builtins.stringLength prefix) s == prefix;
  };

  # `pkgs.formats.toml`: generate records the value; the test hands it to the real binary.
  formats.toml = _: {
    type = mkType "TOML table" builtins.isAttrs;
    generate = name: value: {
      outPath = "/nix/store/00000000000000000000000000000000-${name}";
      inherit name value;
    };
  };
in
{
  inherit lib isType;
  # A module's whole `config`: what a false top-level mkIf leaves is nothing at all.
  resolve = v: let r = resolve v; in if isType "absent" r then { } else r;
  pkgs = {
    inherit formats;
  };
}
