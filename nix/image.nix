# The container image, `nix build .#image` (Linux): the layout of deploy/Dockerfile built with
# dockerTools, so either build gives the image the Kubernetes base deploys (zeroclaw:<version>,
# user 10001, state in /var/lib/zeroclaw, projects below /var/lib/zeroclaw-projects).
# `docker load < result` loads it. Evaluated offline by nix/tests/eval-flake.nix; never built
# where it was written (no nixpkgs there).
{
  lib,
  dockerTools,
  zeroclaw,
  bubblewrap,
  git,
  coreutils,
  bashInteractive,
}:

let
  uid = "10001";
  stateDir = "/var/lib/zeroclaw";
  projectsDir = "/var/lib/zeroclaw-projects";
in
dockerTools.buildLayeredImage {
  name = "zeroclaw";
  tag = zeroclaw.version;
  contents = [
    zeroclaw
    bubblewrap
    git
    coreutils
    bashInteractive
    dockerTools.binSh
    dockerTools.caCertificates
  ];
  # The user and the directories, owned as in deploy/Dockerfile (fakeroot: chown works).
  fakeRootCommands = ''
    mkdir -p etc/zeroclaw .${stateDir} .${projectsDir} run/zeroclaw tmp
    printf 'root:x:0:0:root:/root:/bin/sh\nzeroclaw:x:${uid}:${uid}:zeroclaw agent host:${stateDir}:/bin/false\n' > etc/passwd
    printf 'root:x:0:\nzeroclaw:x:${uid}:\n' > etc/group
    chown ${uid}:${uid} .${stateDir} .${projectsDir} run/zeroclaw
    chmod 0700 .${stateDir}
    chmod 2770 .${projectsDir}
    chmod 0750 run/zeroclaw
    chmod 1777 tmp
  '';
  config = {
    User = "${uid}:${uid}";
    WorkingDir = stateDir;
    Entrypoint = [ (lib.getExe zeroclaw) ];
    Cmd = [
      "daemon"
      "--config-dir"
      "/etc/zeroclaw"
    ];
    Env = [
      "ZEROCLAW_CONFIG_DIR=/etc/zeroclaw"
      "ZEROCLAW_workspace_dir=${stateDir}"
      "PATH=/bin"
      "SSL_CERT_FILE=/etc/ssl/certs/ca-bundle.crt"
    ];
    ExposedPorts."42617/tcp" = { };
    Labels = {
      "org.opencontainers.image.title" = "zeroclaw";
      "org.opencontainers.image.version" = zeroclaw.version;
    };
  };
}
