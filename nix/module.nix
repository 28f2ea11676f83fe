# NixOS module `services.zeroclaw`: the socket-activated zeroclaw daemon.
#
# The units come from the package (systemd.packages: packaging/systemd/*, the same files the
# Debian package ships); this module only adds drop-ins: the listen addresses, the secrets
# file, and project roots besides the packaged one (/var/lib/zeroclaw-projects, which the
# package's tmpfiles.d creates and its unit opens). The hardening stays in one place.
# Evaluated offline against a stub of lib/pkgs by nix/tests/eval-module.nix.
{
  config,
  lib,
  pkgs,
  ...
}:

let
  cfg = config.services.zeroclaw;
  settingsFormat = pkgs.formats.toml { };
  defaultUnixSocket = "/run/zeroclaw/acp.sock";
  # The daemon serves the sockets systemd passes in; [gateway] listen names the same addresses
  # so that `zeroclaw-acp-bridge --config-dir /etc/zeroclaw` finds them.
  gatewayListen = [ "unix:${cfg.listen.unix}" ] ++ builtins.map (a: "tcp:${a}") cfg.listen.tcp;
  # [audit] mode from `audit.mode`; the key comes in as a credential (see `audit.keyFile`).
  settings = lib.recursiveUpdate {
    gateway.listen = gatewayListen;
    audit.mode = cfg.audit.mode;
  } cfg.settings;
  configFile = settingsFormat.generate "zeroclaw-config.toml" settings;

  # ProtectHome=yes hides these trees entirely; project roots inside them are bind-mounted into
  # an empty tmpfs instead (ProtectHome=tmpfs + BindPaths=).
  hiddenByProtectHome = path: lib.any (top: lib.hasPrefix top path) [ "/home/" "/root/" "/run/user/" ];
  homeProjectRoots = lib.filter hiddenByProtectHome cfg.extraProjectRoots;
  # The daemon's state (workspace_dir): a denied path, so no session opens in or below it.
  stateDir = "/var/lib/zeroclaw";
  insideState = path: path == stateDir || lib.hasPrefix "${stateDir}/" path;
in
{
  options.services.zeroclaw = {
    enable = lib.mkEnableOption "the zeroclaw agent host daemon, socket-activated on ${defaultUnixSocket}";

    package = lib.mkOption {
      type = lib.types.package;
      default = pkgs.zeroclaw;
      defaultText = lib.literalExpression "pkgs.zeroclaw (the flake's overlay), or the flake's own package";
      description = "The zeroclaw package; its lib/systemd/system units are used as they are.";
    };

    settings = lib.mkOption {
      inherit (settingsFormat) type;
      default = { };
      example = lib.literalExpression ''
        {
          acp.max_sessions = 20;
          providers.local = { kind = "openai"; base_url = "http://127.0.0.1:11434/v1"; };
          agents.coder = { provider = "local"; model = "qwen3-coder"; };
        }
      '';
      description = ''
        zeroclaw configuration, written to /etc/zeroclaw/config.toml (world-readable in the
        Nix store: put secrets in `environmentFile`). Keys: docs/configuration.md.
        `gateway.listen` defaults to the addresses of `listen`.
      '';
    };

    environmentFile = lib.mkOption {
      type = lib.types.nullOr lib.types.path;
      default = null;
      example = "/run/secrets/zeroclaw.env";
      description = ''
        File of VARIABLE=value lines read by systemd (as root) for the service: provider API
        keys such as OPENROUTER_API_KEY, or ZEROCLAW_* overrides. Kept out of the store.
      '';
    };

    listen = {
      unix = lib.mkOption {
        type = lib.types.str;
        default = defaultUnixSocket;
        description = "Path of the Unix socket (zeroclaw.socket, file descriptor name `acp`).";
      };
      tcp = lib.mkOption {
        type = lib.types.listOf lib.types.str;
        default = [ ];
        example = [ "127.0.0.1:42617" ];
        description = ''
          TCP listen addresses (zeroclaw-tcp.socket, file descriptor name `acp-tcp`); empty
          leaves TCP off. Every TCP connection needs a bearer token.
        '';
      };
    };

    audit = {
      mode = lib.mkOption {
        type = lib.types.enum [
          "required"
          "best_effort"
        ];
        default = "required";
        description = ''
          `[audit] mode` (docs/audit.md): `required` fails a tool call whose audit record cannot
          be written; `best_effort` logs the loss and runs the call (`zeroclaw doctor` warns).
          The log itself, /var/lib/zeroclaw/sessions/audit.db, is always on.
        '';
      };
      keyFile = lib.mkOption {
        type = lib.types.nullOr lib.types.str;
        default = null;
        example = "/run/secrets/zeroclaw-audit.key";
        description = ''
          A file of at least 32 bytes (e.g. `head -c 32 /dev/urandom | base64`), kept out of the
          store, that keys the audit chain (HMAC-SHA-256). systemd hands it to the service as
          the credential `audit-key` (LoadCredential=, readable only by the service) and
          `[audit] key_file` points there, so the file itself may stay root-only.
        '';
      };
    };

    extraProjectRoots = lib.mkOption {
      type = lib.types.listOf lib.types.str;
      default = [ ];
      example = [
        "/srv/agents"
        "/home/alice/src"
      ];
      description = ''
        Project roots besides /var/lib/zeroclaw-projects (which the packaged unit always
        opens): directories whose subdirectories sessions may work in (session/new cwd),
        opened for writing (ReadWritePaths=, added to the unit's); those under /home, /root or
        /run/user are bind-mounted into an otherwise empty home (ProtectHome=tmpfs). The user
        `zeroclaw` needs write access to them (a group or an ACL). The daemon's state,
        /var/lib/zeroclaw (workspace_dir), is never a session's cwd.
      '';
    };
  };

  config = lib.mkIf cfg.enable {
    assertions = [
      {
        assertion = !lib.any insideState cfg.extraProjectRoots;
        message = ''
          services.zeroclaw.extraProjectRoots: ${stateDir} is the daemon's state
          (workspace_dir), a denied path where no session opens; use a directory outside it.
        '';
      }
    ];
    systemd.packages = [ cfg.package ];
    systemd.tmpfiles.packages = [ cfg.package ];
    environment.systemPackages = [ cfg.package ];
    environment.etc."zeroclaw/config.toml".source = configFile;

    users.users.zeroclaw = {
      isSystemUser = true;
      group = "zeroclaw";
      home = "/var/lib/zeroclaw";
      description = "zeroclaw agent host";
    };
    users.groups.zeroclaw = { };

    systemd.sockets.zeroclaw = {
      overrideStrategy = "asDropin";
      wantedBy = [ "sockets.target" ];
      socketConfig = lib.mkIf (cfg.listen.unix != defaultUnixSocket) {
        ListenStream = [
          ""
          cfg.listen.unix
        ];
      };
    };

    systemd.sockets.zeroclaw-tcp = lib.mkIf (cfg.listen.tcp != [ ]) {
      overrideStrategy = "asDropin";
      wantedBy = [ "sockets.target" ];
      socketConfig.ListenStream = [ "" ] ++ cfg.listen.tcp;
    };

    systemd.services.zeroclaw = {
      overrideStrategy = "asDropin";
      restartTriggers = [ configFile ];
      environment = lib.mkIf (cfg.audit.keyFile != null) {
        ZEROCLAW_audit__key_file = "%d/audit-key";
      };
      serviceConfig = lib.mkMerge [
        (lib.mkIf (cfg.environmentFile != null) { EnvironmentFile = cfg.environmentFile; })
        (lib.mkIf (cfg.audit.keyFile != null) { LoadCredential = "audit-key:${cfg.audit.keyFile}"; })
        (lib.mkIf (cfg.extraProjectRoots != [ ]) { ReadWritePaths = cfg.extraProjectRoots; })
        (lib.mkIf (homeProjectRoots != [ ]) {
          ProtectHome = "tmpfs";
          BindPaths = homeProjectRoots;
        })
      ];
    };
  };
}
