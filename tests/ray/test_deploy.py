"""deploy/: the manifests parse, agree with each other, and the launcher config fits Ray's schema."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

DEPLOY = Path(__file__).parents[2] / "deploy"


def load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def containers(spec: dict) -> list[dict]:
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def test_the_raycluster_has_a_head_cpu_workers_and_gpu_workers_for_speech() -> None:
    cluster = load("kuberay/raycluster.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    spec = cluster["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    assert groups["calls"]["minReplicas"] <= groups["calls"]["replicas"] <= groups["calls"]["maxReplicas"]
    gpu = groups["speech-gpu"]
    assert gpu["rayStartParams"]["num-gpus"] == "1"
    [container] = gpu["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for c in containers(spec):
        assert c["image"].startswith("ghcr.io/tamesu/tamesu:")
        env = {e["name"]: e for e in c.get("env", [])}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "tamesu-ray-token"
    ports = {
        p["name"]: p["containerPort"]
        for p in spec["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert ports["dashboard"] == 8265


def test_the_rayjob_runs_a_load_test_through_the_job_entrypoint() -> None:
    job = load("kuberay/rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:4] == ["python", "-m", "tamesu.cluster_job", "load"]
    from tamesu.cli import build_parser

    args = build_parser("load").parse_args(argv[3:])
    assert (args.rate, args.duration, args.min_pass_rate) == (20.0, "10m", 0.95)
    runtime = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    assert runtime["working_dir"].endswith(".zip")
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    assert (
        job["spec"]["rayClusterSpec"]["rayVersion"] == load("kuberay/raycluster.yaml")["spec"]["rayVersion"]
    )


def test_the_cluster_launcher_config_fits_rays_schema() -> None:
    ray = pytest.importorskip("ray")
    from jsonschema import Draft7Validator

    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    config = load("cluster.yaml")
    assert [e.message for e in Draft7Validator(schema).iter_errors(config)] == []
    assert config["head_node_type"] in config["available_node_types"]
    assert config["available_node_types"]["speech_gpu"]["node_config"]["InstanceType"].startswith("g5")


def test_the_image_has_the_speech_models_chromium_and_the_same_ray_as_the_manifests() -> None:
    text = (DEPLOY / "Containerfile").read_text()
    packages = re.search(r"apt-get install[^\n]*\n\s+(.+?)\s+\\", text)
    assert packages is not None
    assert {"chromium", "espeak-ng", "sox", "ffmpeg"} <= set(packages.group(1).split())
    assert '".[ray,voice,models,embed]"' in text
    assert "assert a['tts']['piper']['installed'] and a['stt']['whisper']['installed']" in text
    version = re.search(r"ARG RAY_IMAGE=rayproject/ray:([\d.]+)-", text)
    assert version is not None and version.group(1) == load("kuberay/raycluster.yaml")["spec"]["rayVersion"]
    assert (DEPLOY / "README.md").read_text().count("tamesu submit") >= 2
