"""The base image scripts/services.sh builds without any registry: Python 3.11 with pip and
venv, `pip install` allowed system-wide (as in the official python image), and the host's CA
bundle so installs through the egress proxy verify."""

from __future__ import annotations

from pathlib import Path

from agentenv_docker_sandbox.testing import BASE_IMAGE

HOST_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def test_base_image_is_python_311_with_pip_venv_and_the_host_ca_bundle(docker_client):
    script = (
        "import glob, os, ssl, subprocess, sys\n"
        "print(sys.version_info[:2] == (3, 11))\n"
        "print(not glob.glob('/usr/lib/python3*/EXTERNALLY-MANAGED'))\n"
        "print(subprocess.run([sys.executable, '-m', 'venv', '--help'], capture_output=True).returncode == 0)\n"
        "print(subprocess.run(['pip', '--version'], capture_output=True).returncode == 0)\n"
        "print(all(os.environ.get(k) == '/etc/ssl/certs/ca-certificates.crt'"
        " for k in ('PIP_CERT', 'REQUESTS_CA_BUNDLE', 'SSL_CERT_FILE')))\n"
    )
    out = docker_client.containers.run(BASE_IMAGE, ["python", "-c", script], remove=True)
    assert out.decode().split() == ["True"] * 5
    bundle = docker_client.containers.run(
        BASE_IMAGE, ["cat", "/etc/ssl/certs/ca-certificates.crt"], remove=True
    )
    if HOST_BUNDLE.exists():
        assert bundle == HOST_BUNDLE.read_bytes()
    tags = docker_client.images.get(BASE_IMAGE).tags
    assert "python:3.11-slim" in tags
