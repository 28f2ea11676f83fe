#!/usr/bin/env python3
"""Checks that rendered Kubernetes manifests deploy what deploy/Dockerfile and the flake build,
in a layout where sessions open. Called by deploy/kubernetes/check.sh:

  check_image_layout.py REPO FLAKE_JSON|- RENDERED.yaml...

- every container and init container names the image title:version of the Dockerfile's
  labels, whose version is Cargo.toml's; with FLAKE_JSON (nix/tests/eval-flake.nix's output),
  the flake's image has that name and tag, too;
- the pod runs as the Dockerfile's numeric USER (and the flake image's User);
- the image's ZEROCLAW_workspace_dir is base/config.toml's workspace_dir (the environment wins
  over the file), and a volume is mounted there;
- a PersistentVolumeClaim (the projects root) is mounted at a path that is neither
  workspace_dir nor inside it (nor holding it): workspace_dir is a denied cwd.
"""
import json
import re
import sys
import tomllib
from pathlib import PurePosixPath

import yaml


def fail(message):
    sys.exit(f"check_image_layout: {message}")


def dockerfile_facts(text):
    text = text.replace("\\\n", " ")
    labels = dict(re.findall(r'org\.opencontainers\.image\.(\w+)="([^"]*)"', text))
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    env = dict(re.findall(r"(ZEROCLAW_\w+)=(\S+)", " ".join(re.findall(r"^ENV\s+(.*)$", text, re.M))))
    if "title" not in labels or "version" not in labels or len(users) != 1:
        fail("deploy/Dockerfile lacks the title/version labels or one USER")
    if not re.fullmatch(r"\d+:\d+", users[0]) or users[0].startswith("0:"):
        fail(f"deploy/Dockerfile: USER {users[0]} is not a numeric non-root uid:gid")
    return f'{labels["title"]}:{labels["version"]}', labels["version"], users[0], env


def inside(path, parent):
    path, parent = PurePosixPath(path), PurePosixPath(parent)
    return path == parent or parent in path.parents


def check_rendered(name, docs, image, user, workspace_dir):
    deployments = [d for d in docs if d and d.get("kind") == "Deployment"]
    if not deployments:
        fail(f"{name}: no Deployment")
    claims = {d["metadata"]["name"] for d in docs if d and d.get("kind") == "PersistentVolumeClaim"}
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        context = pod.get("securityContext", {})
        if f'{context.get("runAsUser")}:{context.get("runAsGroup")}' != user:
            fail(f"{name}: the pod runs as {context.get('runAsUser')}:{context.get('runAsGroup')}, the image as {user}")
        projected = {v["name"] for v in pod["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName") in claims}
        for container in pod.get("initContainers", []) + pod["containers"]:
            where = f'{name}: container {container["name"]}'
            if container["image"] != image:
                fail(f'{where} runs {container["image"]}, what is built is {image}')
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            if workspace_dir not in mounts:
                fail(f"{where}: nothing mounted at workspace_dir {workspace_dir}")
            projects = [path for path, volume in mounts.items() if volume in projected]
            if len(projects) != 1:
                fail(f"{where}: expected one projects volume (a PersistentVolumeClaim), found {projects}")
            if inside(projects[0], workspace_dir) or inside(workspace_dir, projects[0]):
                fail(f"{where}: the projects root {projects[0]} and workspace_dir {workspace_dir} overlap")
            print(f"deploy/kubernetes: {where}: {image}, state {workspace_dir}, projects {projects[0]}")


def main():
    repo, flake_json, *rendered = sys.argv[1:]
    image, version, user, env = dockerfile_facts(open(f"{repo}/deploy/Dockerfile").read())
    cargo = tomllib.load(open(f"{repo}/Cargo.toml", "rb"))["workspace"]["package"]["version"]
    if version != cargo:
        fail(f"deploy/Dockerfile's version label {version} is not Cargo.toml's {cargo}")
    config = tomllib.load(open(f"{repo}/deploy/kubernetes/base/config.toml", "rb"))
    workspace_dir = config.get("workspace_dir")
    if env.get("ZEROCLAW_workspace_dir") != workspace_dir:
        fail(f"the image sets ZEROCLAW_workspace_dir={env.get('ZEROCLAW_workspace_dir')}, which overrides config.toml's {workspace_dir}")
    if flake_json != "-":
        flake = json.load(open(flake_json))["image"]
        built = f'{flake["name"]}:{flake["tag"]}'
        if (built, flake["user"], flake["workspaceDir"]) != (image, user, workspace_dir):
            fail(f"the flake's image ({built}, user {flake['user']}, workspace_dir {flake['workspaceDir']}) "
                 f"differs from deploy/Dockerfile's ({image}, user {user}, workspace_dir {workspace_dir})")
        print(f"deploy/kubernetes: the flake's image is {built}, user {user}, like deploy/Dockerfile's")
    for path in rendered:
        check_rendered(path.rsplit("/", 1)[-1], list(yaml.safe_load_all(open(path))), image, user, workspace_dir)


main()
