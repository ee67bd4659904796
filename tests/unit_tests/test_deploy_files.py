"""The production deployment in deploy/ (Docker is not here to run it, so its files are read and
checked): every variable the compose file gives Keel is a Keel setting (or named here as another
program's) and makes a valid configuration; images are pinned by tag; secrets come from the
environment, never from the file or a URL; the replicas share one Redis and one MongoDB replica set
behind the load balancer; every long-running service has a health check; the engines' limits agree
with Keel's settings."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from keel.core.configuration import Configuration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
KEEL = SERVICES["keel"]
# Variables the Keel container gets that are another program's, with whose they are.
NOT_KEEL_SETTINGS = {"FORWARDED_ALLOW_IPS": "uvicorn: trust X-Forwarded-For from the proxy only"}
SECRET_WORDS = {"PASSWORD", "KEY", "TOKEN", "SECRET", "AUTH"}  # parts of a variable's name
_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def keel_setting_variables() -> dict[str, str]:
    return {item.metadata["env"]: item.name for item in dataclasses.fields(Configuration) if "env" in item.metadata}


def interpolate(value: str, environment: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} (and $$ for a literal $)."""

    def one(match: re.Match) -> str:
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        if environment.get(name):
            return environment[name]
        if op == ":?":
            raise KeyError(f"{name} is required: {arg}")
        return arg if op == ":-" else ""

    return _INTERPOLATION.sub(one, str(value)).replace("$$", "$")


def is_secret(variable: str) -> bool:
    return bool(SECRET_WORDS & set(variable.split("_")))


def env_example() -> dict[str, str]:
    pairs = [line.split("=", 1) for line in (DEPLOY / "env.example").read_text().splitlines()
             if line and not line.startswith("#")]
    return {name: value for name, value in pairs}


FILLED = {**env_example(), **{name: f"secret-{name.lower()}" for name, value in env_example().items() if not value},
          "KEEL_MODELS_DIR": "/srv/models"}


def test_every_variable_given_to_keel_is_a_keel_setting():
    known = keel_setting_variables()
    unknown = sorted(set(KEEL["environment"]) - set(known) - set(NOT_KEEL_SETTINGS))
    assert not unknown, f"not Keel settings (a typo is silently ignored by Keel): {unknown}"


def test_the_keel_environment_makes_a_valid_configuration_with_the_deployments_values(monkeypatch):
    for name in keel_setting_variables():
        monkeypatch.delenv(name, raising=False)
    environment = {name: interpolate(value, FILLED) for name, value in KEEL["environment"].items()}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    cfg = Configuration()  # a wrong value would be a ConfigurationError naming the variable
    assert cfg.redis_url == "redis://redis:6379/0" and cfg.redis_password == "secret-redis_password"
    assert cfg.mongodb_uri.startswith("mongodb://mongo-1:27017,mongo-2:27017,mongo-3:27017/?replicaSet=rs0")
    assert (cfg.llm_endpoint, cfg.embedding_endpoint) == ("http://llm:80", "http://embeddings:80")
    assert cfg.llm_api_key and cfg.embedding_api_key and cfg.mongodb_password
    assert cfg.chat_runtime == "endpoint"
    assert (cfg.redis_max_connections, cfg.mongodb_max_pool_size, cfg.redis_retries) == (64, 50, 1)


def test_secrets_come_from_the_environment_and_never_sit_in_the_file_or_a_url():
    for service_name, service in SERVICES.items():
        for name, value in (service.get("environment") or {}).items():
            if is_secret(name) or name == "REDIS_ARGS":
                for secret in re.findall(r"--requirepass\s+(\$\{[^}]*\}|\S+)", str(value)) or [value]:
                    assert re.fullmatch(r"\$\{[A-Z0-9_]+:\?[^}]+\}", str(secret)), (service_name, name, value)
            assert not re.search(r"://[^/@\s]*:[^/@\s]*@", str(value)), f"{service_name}.{name} has a password in a URL"
    # the example environment file holds no secret values, only their names
    example = env_example()
    assert all(not value for name, value in example.items() if is_secret(name))


def test_every_image_is_pinned_by_tag():
    for name, service in SERVICES.items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and tag and tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned"
    assert re.search(r"^FROM \S+:\d[\w.-]*$", (DEPLOY / "Dockerfile").read_text(), re.M)


def test_the_replicas_share_one_redis_and_one_mongodb_replica_set_behind_the_load_balancer():
    assert int(interpolate(KEEL["deploy"]["replicas"], {})) >= 2
    environment = KEEL["environment"]
    assert environment["REDIS_URL"] == "redis://redis:6379/0"
    members = re.findall(r"(mongo-\d):27017", environment["MONGODB_URI"])
    assert members == ["mongo-1", "mongo-2", "mongo-3"] and "replicaSet=rs0" in environment["MONGODB_URI"]
    for member in members:
        assert "--replSet rs0" in " ".join(SERVICES[member]["entrypoint"])
    init_script = (DEPLOY / "mongo-init.js").read_text()
    assert all(f'"{member}:27017"' in init_script for member in members) and '"rs0"' in init_script
    assert KEEL["depends_on"]["mongo-init"]["condition"] == "service_completed_successfully"
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert re.search(r"upstream keel \{[^}]*server keel:8000 resolve", nginx)
    assert "proxy_pass http://keel;" in nginx
    assert "proxy_buffering off;" in nginx  # streamed answers pass through at once
    assert SERVICES["proxy"]["networks"]["backend"]["ipv4_address"] == environment["FORWARDED_ALLOW_IPS"]
    assert "ports" not in KEEL, "replicas are reached through the proxy only"


def test_every_long_running_service_has_a_health_check():
    for name, service in SERVICES.items():
        if service.get("restart") == "no":
            continue  # a one-off job (mongo-init)
        if "build" in service:  # Keel's replicas: the image's own HEALTHCHECK, on /healthz
            dockerfile = (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).read_text()
            assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", dockerfile, re.M), name
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_the_engines_limits_agree_with_keels_settings():
    cfg = Configuration()

    def flag(service: str, name: str) -> str:
        return next(item.split("=", 1)[1] for item in SERVICES[service]["command"] if item.startswith(f"--{name}="))

    assert int(flag("llm", "max-total-tokens")) == cfg.llm_context_window
    assert int(flag("llm", "max-input-tokens")) + cfg.max_new_tokens <= cfg.llm_context_window
    assert int(flag("embeddings", "max-client-batch-size")) >= cfg.embedding_batch_size
    assert flag("embeddings", "model-id").endswith("all-MiniLM-L6-v2")
    assert KEEL["environment"]["KEEL_EMBEDDING_MODEL"] == flag("embeddings", "model-id")
    assert KEEL["environment"]["KEEL_CHAT_TOKENIZER"] == flag("llm", "model-id")
    body = re.search(r"client_max_body_size (\d+)m;", (DEPLOY / "nginx.conf").read_text())
    assert int(body.group(1)) * 2**20 >= cfg.max_file_bytes * 4 / 3 + cfg.upload_overhead_bytes


@pytest.mark.parametrize("service", ["llm", "embeddings"])
def test_the_model_servers_take_keels_api_keys(service):
    variable = {"llm": "KEEL_LLM_API_KEY", "embeddings": "KEEL_EMBEDDING_API_KEY"}[service]
    assert SERVICES[service]["environment"]["API_KEY"] == KEEL["environment"][variable]


def test_the_deployment_guide_names_every_connection_setting_and_the_compose_files_images():
    """docs/deployment.md is the same deployment as plain commands: it must stay true to the compose
    file and list every variable a production connection is configured with."""
    from keel.core.settings.connection import ConnectionSettings

    guide = (DEPLOY.parent / "docs" / "deployment.md").read_text()
    connection_variables = {item.metadata["env"] for item in dataclasses.fields(ConnectionSettings)}
    runtime_variables = {"REDIS_URL", "MONGODB_URI", "KEEL_LLM_ENDPOINT", "KEEL_EMBEDDING_ENDPOINT",
                         "KEEL_CHAT_TOKENIZER", "KEEL_EMBEDDING_MODEL", "KEEL_CONNECT_TIMEOUT_S",
                         "KEEL_REQUEST_TIMEOUT_S", "KEEL_CHAT_RUNTIME"}
    assert runtime_variables <= set(keel_setting_variables())
    missing = sorted(name for name in connection_variables | runtime_variables if f"`{name}`" not in guide)
    assert not missing, f"docs/deployment.md does not document {missing}"
    for name, service in SERVICES.items():
        if "build" not in service:
            assert service["image"] in guide, f"docs/deployment.md runs another image than {name}'s {service['image']}"
