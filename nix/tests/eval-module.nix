# Offline evaluation of the NixOS module (nix/module.nix) against nix/tests/stub-lib.nix.
#
#   nix-instantiate --eval --strict --json nix/tests/eval-module.nix
#
# Asserts that the module only adds drop-ins to units the package ships (packaging/systemd),
# that it agrees with those units on user, config dir and socket path, and that it is inert
# when disabled. Prints, as JSON, the drop-ins rendered the way NixOS writes them
# (`overrides.conf`), the sockets.target wiring and the rendered settings; packaging/check.sh
# puts the drop-ins next to the packaged units and runs `systemd-analyze verify` and
# `security` on the result, and `zeroclaw config check` on the settings.
let
  stub = import ./stub-lib.nix;
  inherit (stub) lib resolve;
  module = import ../module.nix;

  unitDir = ../../packaging/systemd;
  packagedUnits = builtins.attrNames (builtins.readDir unitDir);
  packagedService = builtins.readFile (unitDir + "/zeroclaw.service");
  packagedSocket = builtins.readFile (unitDir + "/zeroclaw.socket");
  packagedTmpfiles = builtins.readFile ../../packaging/tmpfiles.d/zeroclaw.conf;
  # The value of the last `Key=` line of a unit file (the one systemd uses for a single value).
  unitValue =
    key: text:
    let
      m = builtins.match "(.*\n)?${key}=([^\n]*)\n.*" text;
    in
    if m == null then throw "no ${key}= in a packaged unit" else builtins.elemAt m 1;

  hasLine = line: text: builtins.match "(.*\n)?${line}\n.*" text != null;

  fakePackage = {
    outPath = "/nix/store/11111111111111111111111111111111-zeroclaw-0.1.0";
    name = "zeroclaw-0.1.0";
  };
  pkgs = stub.pkgs // {
    zeroclaw = fakePackage;
  };

  testSettings = {
    acp.max_sessions = 4;
    providers.local = {
      kind = "openai";
      base_url = "http://127.0.0.1:11434/v1";
    };
    agents.coder = {
      provider = "local";
      model = "qwen3-coder";
      max_tool_iterations = 40;
    };
  };
  testConfig = {
    enable = true;
    settings = testSettings;
    environmentFile = "/run/secrets/zeroclaw.env";
    listen.tcp = [ "127.0.0.1:42617" ];
    audit.keyFile = "/run/secrets/zeroclaw-audit.key";
    extraProjectRoots = [
      "/srv/agents"
      "/home/alice/src"
    ];
  };

  declared = (module {
    config = { };
    inherit lib pkgs;
  }).options.services.zeroclaw;

  defaultsOf = builtins.mapAttrs (_: o: if stub.isType "option" o then o.default else defaultsOf o);

  # Every value the test sets must pass its option's type, and name a declared option.
  typeErrors =
    opts: values: prefix:
    builtins.concatLists (
      builtins.map (
        n:
        let
          o = opts.${n} or (throw "services.zeroclaw${prefix}.${n} is not a declared option");
          v = values.${n};
        in
        if stub.isType "option" o then
          (if o.type.check v then [ ] else [ "services.zeroclaw${prefix}.${n}: not a ${o.type.name}" ])
        else
          typeErrors o v "${prefix}.${n}"
      ) (builtins.attrNames values)
    );

  evaluate =
    cfg:
    resolve
      (module {
        config.services.zeroclaw = lib.recursiveUpdate (defaultsOf declared) cfg;
        inherit lib pkgs;
      }).config;

  enabled = evaluate testConfig;
  renderedSettings = enabled.environment.etc."zeroclaw/config.toml".source.value;
  disabled = evaluate { };

  # NixOS renders unit options like this (nixos/lib/systemd-lib.nix, attrsToSection).
  renderValue =
    v:
    if builtins.isBool v then
      (if v then "true" else "false")
    else if builtins.isAttrs v && v ? outPath then
      v.outPath
    else
      toString v;
  renderSection =
    name: attrs:
    if attrs == { } then
      ""
    else
      "[${name}]\n"
      + builtins.concatStringsSep "" (
        builtins.concatMap (
          k:
          let
            v = attrs.${k};
          in
          builtins.map (x: "${k}=${renderValue x}\n") (if builtins.isList v then v else [ v ])
        ) (builtins.attrNames attrs)
      );
  unitSection =
    def:
    (def.unitConfig or { })
    // (
      if def ? restartTriggers then
        { X-Restart-Triggers = builtins.concatStringsSep " " (builtins.map renderValue def.restartTriggers); }
      else
        { }
    );
  environmentLines =
    def: builtins.map (n: "${n}=${def.environment.${n}}") (builtins.attrNames (def.environment or { }));
  renderDropin =
    kind: def:
    renderSection "Unit" (unitSection def)
    + renderSection (if kind == "service" then "Service" else "Socket") (
      (if kind == "service" then def.serviceConfig or { } else def.socketConfig or { })
      // (if environmentLines def == [ ] then { } else { Environment = environmentLines def; })
    );

  unitsOf = kind: enabled.systemd."${kind}s" or { };
  dropinsOf =
    kind:
    builtins.listToAttrs (
      builtins.map (n: {
        name = "${n}.${kind}.d/overrides.conf";
        value =
          let
            def = (unitsOf kind).${n};
          in
          assert
            builtins.elem "${n}.${kind}" packagedUnits
            || throw "the module configures ${n}.${kind}, which packaging/systemd does not ship";
          assert
            (def.overrideStrategy or null) == "asDropin"
            || throw "${n}.${kind}: the module must only add drop-ins (overrideStrategy = \"asDropin\")";
          renderDropin kind def;
      }) (builtins.attrNames (unitsOf kind))
    );
  wantedBy = builtins.listToAttrs (
    builtins.concatMap (
      kind:
      builtins.map (n: {
        name = "${n}.${kind}";
        value = (unitsOf kind).${n}.wantedBy or [ ];
      }) (builtins.attrNames (unitsOf kind))
    ) [ "service" "socket" ]
  );

  errors = typeErrors declared testConfig "";
  # The projects root: the packaged unit's ReadWritePaths=, a directory tmpfiles.d creates.
  projectsRoot = unitValue "ReadWritePaths" packagedService;
  failedAssertions = cfg: builtins.filter (a: !a.assertion) ((evaluate cfg).assertions or [ ]);
  checks = [
    {
      ok = errors == [ ];
      what = "the test configuration type-checks" + lib.concatMapStrings (e: "; ${e}") errors;
    }
    {
      ok =
        builtins.match ".*\nd +${projectsRoot} +2770 +zeroclaw +zeroclaw +-\n.*" packagedTmpfiles != null
        && unitValue "Environment=ZEROCLAW_workspace_dir" packagedService != projectsRoot;
      what = "the packaged unit opens the projects root ${projectsRoot}, which tmpfiles.d creates (2770)";
    }
    {
      ok = !(builtins.elem "" (enabled.systemd.services.zeroclaw.serviceConfig.ReadWritePaths or [ ]));
      what = "the module's drop-in adds to the unit's ReadWritePaths= (never resets them)";
    }
    {
      ok =
        failedAssertions testConfig == [ ]
        && builtins.length (failedAssertions (testConfig // { extraProjectRoots = [ "/var/lib/zeroclaw/p" ]; })) == 1;
      what = "a project root inside the state directory (workspace_dir) is an assertion failure";
    }
    {
      ok = disabled == { };
      what = "the module is inert when services.zeroclaw.enable is false";
    }
    {
      ok = enabled.systemd.packages == [ fakePackage ];
      what = "the units come from the package (systemd.packages)";
    }
    {
      ok = enabled.systemd.tmpfiles.packages == [ fakePackage ];
      what = "tmpfiles.d comes from the package (systemd.tmpfiles.packages)";
    }
    {
      ok = enabled.users.users ? ${unitValue "User" packagedService};
      what = "the module declares the packaged service's User=";
    }
    {
      ok = enabled.users.groups ? ${unitValue "Group" packagedService};
      what = "the module declares the packaged service's Group=";
    }
    {
      ok =
        hasLine "Environment=ZEROCLAW_CONFIG_DIR=/etc/zeroclaw" packagedService
        && enabled.environment.etc ? "zeroclaw/config.toml";
      what = "settings land in the packaged service's ZEROCLAW_CONFIG_DIR (/etc/zeroclaw)";
    }
    {
      ok = renderedSettings == lib.recursiveUpdate testSettings { inherit (renderedSettings) gateway audit; };
      what = "settings reach config.toml unchanged";
    }
    {
      ok = renderedSettings.audit == { mode = "required"; };
      what = "[audit] mode comes from audit.mode (default required)";
    }
    {
      ok =
        enabled.systemd.services.zeroclaw.serviceConfig.LoadCredential
        == "audit-key:/run/secrets/zeroclaw-audit.key"
        && enabled.systemd.services.zeroclaw.environment.ZEROCLAW_audit__key_file == "%d/audit-key";
      what = "audit.keyFile is a credential and [audit] key_file points at it";
    }
    {
      ok = !((evaluate { enable = true; }).systemd.services.zeroclaw ? environment);
      what = "no audit key: no credential, no key_file";
    }
    {
      ok = renderedSettings.gateway.listen == [
        "unix:/run/zeroclaw/acp.sock"
        "tcp:127.0.0.1:42617"
      ];
      what = "[gateway] listen names the socket units' addresses (for zeroclaw-acp-bridge)";
    }
    {
      ok = declared.listen.unix.default == unitValue "ListenStream" packagedSocket;
      what = "listen.unix defaults to the packaged socket's ListenStream=";
    }
    {
      ok = (wantedBy."zeroclaw.socket" or [ ]) == [ "sockets.target" ];
      what = "zeroclaw.socket is wanted by sockets.target";
    }
  ];
  failed = builtins.filter (c: !c.ok) checks;
in
if failed != [ ] then
  throw "eval-module: ${builtins.concatStringsSep "\n  " (builtins.map (c: c.what) failed)}"
else
  {
    dropins = dropinsOf "service" // dropinsOf "socket";
    inherit wantedBy;
    settings = renderedSettings;
    passed = builtins.map (c: c.what) checks;
  }
