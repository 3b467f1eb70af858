"""Redaction against a planted-secrets corpus modelled on gitleaks' rule kinds, and in every file of a bundle.

The corpus plants one or more fake secrets per line in the shapes they take in real logs, command
lines, JSON lines, Kubernetes objects and HTTP dumps (the token formats of gitleaks' rule set plus the
variants that leaked before: a flag and its value apart, `"pwd"` in JSON, `redis://:PASS@host`, `@`
inside a URL password, `-pPASS`, PGP blocks, Azure `AccountKey=`, `Cookie:` headers, `curl -u`).
Every planted value is built here from a seeded generator, so none of them is a real credential.
"""

# ruff: noqa: E501  (log lines are longer than the code line limit)

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
from support.bundle import archive_members, pod, pod_list

from gpuobs.rca.bundle import make_bundle
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.redact import MASK, Redactor, redact_json, redact_text

_RNG = random.Random(20260110)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def tok(n: int, alphabet: str = ALNUM) -> str:
    """A random-looking string of `n` characters (always with a digit and a capital, as real keys are)."""
    body = "".join(_RNG.choice(alphabet) for _ in range(n))
    return body


def _with_digit(s: str) -> str:
    return s[:-1] + "7" if not any(c.isdigit() for c in s) else s


# (kind, text with the secrets in it, the secrets)
PLANTED: list[tuple[str, str, tuple[str, ...]]] = []


def plant(kind: str, template: str, *secrets: str) -> None:
    PLANTED.append((kind, template.format(*secrets), secrets))


# -- vendor token formats (gitleaks rule ids in the kind) -----------------------------------------------
plant(
    "aws-access-token",
    "2025-02-23T16:24:19Z INFO boto: using access key {0} for s3://ckpt",
    "AKIA" + tok(16, UPPER),
)
plant("aws-secret", "aws_secret_access_key = {0}", tok(40, B64))
plant(
    "aws-env",
    "export AWS_SECRET_ACCESS_KEY={0} AWS_SESSION_TOKEN={1}",
    tok(40, B64),
    "IQoJb3JpZ2luX2Vj" + tok(80, B64),
)
plant("github-pat", "fatal: Authentication failed for token {0}", "ghp_" + tok(36))
plant(
    "github-clone-url",
    "git clone https://x-access-token:{0}@github.com/org/model-configs.git",
    "ghs_" + tok(36),
)
plant("github-oauth", "GITHUB_TOKEN={0}", "gho_" + tok(36))
plant("github-refresh", "refresh={0}", "ghr_" + tok(76))
plant("github-fine-grained-pat", "using {0} for the release", "github_pat_" + tok(22) + "_" + tok(59))
plant("gitlab-pat", "PRIVATE-TOKEN: {0}", "glpat-" + tok(20, URLSAFE))
plant("gitlab-runner", "runner token {0} registered", "glrt-" + tok(20, URLSAFE))
plant(
    "slack-bot-token",
    "slack notify with {0}",
    "xoxb-" + tok(12, string.digits) + "-" + tok(12, string.digits) + "-" + tok(24),
)
plant(
    "slack-user-token",
    '{{"slack": {{"token": "{0}"}}}}',
    "xoxp-" + tok(12, string.digits) + "-" + tok(12, string.digits) + "-" + tok(32, HEX),
)
plant(
    "slack-app-token",
    'SLACK_APP="{0}"',
    "xapp-1-A" + tok(10, UPPER) + "-" + tok(13, string.digits) + "-" + tok(64, HEX),
)
plant(
    "slack-webhook",
    "alert sink https://hooks.slack.com/services/{0}",
    "T" + tok(8, UPPER) + "/B" + tok(8, UPPER) + "/" + tok(24),
)
plant("stripe-access-token", "billing: charge failed with key {0}", "sk_live_" + tok(24))
plant("stripe-restricted", "STRIPE_KEY: {0}", "rk_live_" + tok(24))
plant("gcp-api-key", "https://generativelanguage.googleapis.com/v1/models?key={0}", "AIza" + tok(35, URLSAFE))
plant(
    "google-oauth-access-token", "Authorization token from metadata server: {0}", "ya29." + tok(120, URLSAFE)
)
plant("google-oauth-client-secret", "client_secret={0}", "GOCSPX-" + tok(28, URLSAFE))
plant(
    "huggingface-access-token", "HF_TOKEN={0} huggingface-cli download meta-llama/Llama-3-8B", "hf_" + tok(34)
)
plant("openai-api-key", "OPENAI_API_KEY={0}", "sk-proj-" + tok(20) + "T3BlbkFJ" + tok(20))
plant("anthropic-api-key", "x-api-key: {0}", "sk-ant-api03-" + tok(93, URLSAFE) + "AA")
plant(
    "nvidia-ngc-key",
    "NGC_API_KEY set; docker login nvcr.io -u '$oauthtoken' --password-stdin <<< {0}",
    "nvapi-" + tok(64, URLSAFE),
)
plant("ngc-in-prose", "pulling with {0}", "nvapi-" + tok(64, URLSAFE))
plant("groq-api-key", "llm fallback key {0}", "gsk_" + tok(52))
plant("npm-access-token", "//registry.npmjs.org/:_authToken={0}", "npm_" + tok(36))
plant("pypi-upload-token", "twine upload -p {0}", "pypi-AgEIcHlwaS5vcmc" + tok(70, URLSAFE))
plant("sendgrid-api-token", "mail via {0}", "SG." + tok(22, URLSAFE) + "." + tok(43, URLSAFE))
plant("twilio-api-key", "twilio sid {0}", "SK" + tok(32, HEX))
plant("mailgun-private-api-token", "mailgun {0}", "key-" + tok(32, HEX))
plant("digitalocean-pat", "doctl auth init -t {0}", "dop_v1_" + tok(64, HEX))
plant("doppler-api-token", "DOPPLER_TOKEN={0}", "dp.pt." + tok(43))
plant("databricks-api-token", "host=adb-1.azuredatabricks.net token {0}", "dapi" + tok(32, HEX))
plant("vault-service-token", "VAULT_TOKEN={0}", "hvs." + tok(90, URLSAFE))
plant("terraform-api-token", "credentials app.terraform.io {0}", tok(14) + ".atlasv1." + tok(67, URLSAFE))
plant("shopify-access-token", "shop token {0}", "shpat_" + tok(32, HEX))
plant("grafana-service-account-token", "GF_TOKEN {0}", "glsa_" + tok(32) + "_" + tok(8, HEX))
plant("linear-api-key", "linear {0}", "lin_api_" + tok(40))
plant("postman-api-token", "postman {0}", "PMAK-" + tok(24, HEX) + "-" + tok(34, HEX))
plant("pulumi-api-token", "pulumi login {0}", "pul-" + tok(40, HEX))
plant("dynatrace-api-token", "dt {0}", "dt0c01." + tok(24, UPPER) + "." + tok(64, UPPER))
plant("atlassian-api-token", "jira {0}", "ATATT3xFfGF0" + tok(180, URLSAFE))
plant("new-relic-user-api-key", "newrelic {0}", "NRAK-" + tok(27, UPPER))
plant("age-secret-key", "# created: 2025-01-01\n{0}", "AGE-SECRET-KEY-1" + tok(58, UPPER))
plant("telegram-bot-api-token", "bot {0} started", tok(9, string.digits) + ":AA" + tok(33, URLSAFE))
plant("azure-ad-client-secret", "AZURE_CLIENT_SECRET={0}", "abc8Q~" + tok(34, URLSAFE))
plant("azure-ad-secret-in-prose", "sp login with {0} ok", "xyz7Q~" + tok(34, URLSAFE))
plant("facebook-access-token", "fb {0}", "EAAC" + tok(120))
plant(
    "jwt",
    "GET /v1/models 401 token={0}",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ" + tok(40, URLSAFE) + "." + tok(43, URLSAFE),
)
plant(
    "kubernetes-sa-jwt",
    "kubectl --token {0} get pods",
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50"
    + tok(200, URLSAFE)
    + "."
    + tok(342, URLSAFE),
)
# -- private keys ------------------------------------------------------------------------------------------
for label in (
    "RSA PRIVATE KEY",
    "PRIVATE KEY",
    "EC PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "DSA PRIVATE KEY",
):
    body = [tok(64, B64) for _ in range(3)]
    plant(
        f"private-key ({label})",
        f"-----BEGIN {label}-----\n{{0}}\n{{1}}\n{{2}}\n-----END {label}-----",
        *body,
    )
pgp = [tok(64, B64) for _ in range(3)]
plant(
    "pgp-private-key-block",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: ops key\n\n{0}\n{1}\n={2}\n-----END PGP PRIVATE KEY BLOCK-----",
    pgp[0],
    pgp[1],
    pgp[2][:4],
)
plant(
    "private-key-escaped-in-json",
    '{{"tls.key": "-----BEGIN RSA PRIVATE KEY-----\\n{0}\\n{1}\\n-----END RSA PRIVATE KEY-----\\n"}}',
    tok(64, B64),
    tok(64, B64),
)
plant(
    "private-key-truncated",
    "cert-manager: bad key:\n-----BEGIN EC PRIVATE KEY-----\n{0}\n{1}\n",
    tok(64, B64),
    tok(40, B64),
)
# -- the variants that leaked (issue 10, item 3) -----------------------------------------------------------
plant(
    "flag-and-value-apart",
    "2025-02-23T16:24:20Z INFO starting: python -m app.server --port 8000 --password {0} --model llama",
    "hunter42",
)
plant(
    "flag-and-value-apart-json-args",
    '{{"command": ["python", "-m", "app"], "args": ["--db-password", "{0}", "--api-key", "{1}"]}}',
    "hunter42x",
    "k3y-" + tok(12),
)
plant("flag-and-value-apart-yaml-list", "args: [--token, {0}, --verbose]", "tkn" + tok(10))
plant(
    "pwd-in-json-line",
    '{{"ts": "2025-02-23T16:24:21Z", "level": "error", "msg": "db connect failed", "pwd": "{0}"}}',
    "Summer2025!",
)
plant(
    "redis-empty-user",
    "redis.exceptions.ConnectionError: Error connecting to redis://:{0}@cache.serving.svc:6379/0",
    "r3dis-" + tok(10),
)
plant(
    "at-inside-url-password",
    "sqlalchemy.exc.OperationalError: could not connect to postgres://app:{0}@db.serving.svc:5432/app",
    "p@ss@w0rd-" + tok(6),
)
plant("mysql-p", "init: mysql -h db -uroot -p{0} models < schema.sql", "Hunt3r2" + tok(5))
plant("mysqldump-quoted", "mysqldump --single-transaction -u backup -p'{0}' app", "B4ckup" + tok(6))
plant(
    "azure-storage-account-key",
    "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey={0};EndpointSuffix=core.windows.net",
    tok(86, B64) + "==",
)
plant(
    "azure-service-bus",
    "Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={0}",
    tok(43, B64) + "=",
)
plant(
    "azure-sas-url",
    "download https://ckpts.blob.core.windows.net/models/w.bin?sv=2022-11-02&ss=b&sp=r&sig={0}",
    tok(40, URLSAFE) + "%3D",
)
plant("stripe-sk-live", "payments: Stripe::AuthenticationError for {0}", "sk_live_" + tok(99))
plant("cookie-header", "> GET /admin HTTP/1.1\n> Cookie: session={0}; csrftoken={1}", tok(32), tok(32))
plant("set-cookie-header", "< Set-Cookie: sessionid={0}; Path=/; HttpOnly", tok(32))
plant(
    "slack-xapp",
    "socket mode with {0}",
    "xapp-1-A" + tok(10, UPPER) + "-" + tok(13, string.digits) + "-" + tok(64, HEX),
)
plant("google-ya29", "gcloud: refreshing ya29 token {0}", "ya29.a0" + tok(150, URLSAFE))
plant("curl-u", "+ curl -sS -u admin:{0} http://grafana:3000/api/dashboards/db", "Gr4fana" + tok(6))
plant("curl-user-quoted", "curl --user 'deploy:{0}' https://registry.example.internal/v2/", "D3ploy" + tok(8))
# -- the usual kinds ------------------------------------------------------------------------------------
plant(
    "bearer-header",
    "calling https://hub.internal/api with header Authorization: Bearer {0}",
    tok(40, URLSAFE),
)
plant("basic-auth-header", "proxy: Proxy-Authorization: Basic {0}", tok(24, B64) + "==")
plant("auth-header-json", '{{"headers": {{"Authorization": "Token {0}", "Accept": "*/*"}}}}', tok(40, HEX))
plant("x-api-key-header", "X-Api-Key: {0}", tok(32))
plant("password-assignment", "ERROR db login failed password={0} user=svc", "Tr0ub4dor&3-horse")
plant("passwd-yaml", "  passwd: {0}", "c0rrect-h0rse")
plant("pgpassword", "PGPASSWORD={0} psql -h db -U app", "pgPass" + tok(8))
plant("client-secret-json", '{{"client_id": "gpuobs", "client_secret": "{0}"}}', tok(32))
plant("python-repr", "settings={{'api_key': '{0}', 'region': 'us-east-1'}}", tok(24))
plant("docker-config-auth", '{{"auths": {{"nvcr.io": {{"auth": "{0}"}}}}}}', tok(40, B64) + "=")
plant("netrc", "machine api.example.com login bot password {0}", "Xy7-netrc-" + tok(6))
plant("password-in-prose", "the password {0} was rejected by the server", "hunter42" + tok(4))
plant("sshpass", "sshpass -p {0} ssh node-7 nvidia-smi", "S5hpass" + tok(6))
plant("redis-cli-a", "redis-cli -h cache -a {0} ping", "R3dis" + tok(8))
plant("docker-login-p", "docker login -u ci -p {0} registry.internal", "D0cker" + tok(8))
plant("url-password-in-query", "jdbc:mysql://db:3306/app?user=app&password={0}&useSSL=true", "Jdbc" + tok(10))
plant("dsn-url", "SENTRY_DSN=https://{0}@o1.ingest.sentry.io/42", tok(32, HEX) + ":" + tok(32, HEX))
plant("api-key-flag-equals", "gpuobs serve --api-key={0} --port 8000", "gpk-" + tok(24))
plant("private-token-header", "Private-Token: {0}", tok(20, URLSAFE))

ORDINARY = [
    "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid=2024380, name=python3, GPU has fallen off the bus.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.72 GiB",
    "node-7:1234:5678 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found",
    "INFO 02-23 16:24:19 metrics.py:455] Avg prompt throughput: 1024.3 tokens/s, Avg generation throughput: 88.1 tokens/s",
    "request done max_tokens=128 token_count=5 tokenizer=llama prompt_tokens=12 completion_tokens=40",
    '{"ts": "2025-02-23T16:24:21Z", "level": "info", "msg": "done", "prompt_tokens": 12, "total_tokens": 52}',
    'FATAL: password authentication failed for user "svc"',
    "Bearer token expired, refreshing",
    "kubectl get secret hf-token -n serving -o yaml",
    "secretName: model-store-credentials",
    "auth_mode=oidc auth_type: none",
    "scraping https://prometheus.monitoring.svc:9090/api/v1/query?query=up",
    "pci_bus_id=00000000:3B:00.0 uuid=GPU-5f1e2d3c-1a2b-3c4d-5e6f-7a8b9c0d1e2f",
    "pulled image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "docker run -p8080:80 --gpus all vllm/vllm-openai:latest",
    "gcc -pthread -O2 -o bench bench.c",
    "passed 12 of 12 tests; compass heading 270",
    "--max-tokens 512 --tokenizer-mode auto --password-file /run/secrets/db",
    "2025-02-23T16:24:19Z WARN kv cache usage 97.5% (num_gpu_blocks=4096)",
    "The bearer of this message is trusted",
    "session_id=42 step=10 loss=0.5",
    "key=value pairs: model=llama batch=8",
    "sk-learn style estimator",
    "token budget: 4096",
]


def _masked(text: str) -> str:
    return redact_text(text)


@pytest.mark.parametrize(("kind", "text", "secrets"), PLANTED, ids=[p[0] for p in PLANTED])
def test_every_planted_secret_is_masked(kind: str, text: str, secrets: tuple[str, ...]) -> None:
    out = _masked(text)
    for secret in secrets:
        assert secret not in out, f"{kind}: {secret!r} survived in {out!r}"
    assert MASK in out, kind


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_log_text_survives(line: str) -> None:
    assert _masked(line) == line


def test_redaction_is_idempotent_and_keeps_the_kind_readable() -> None:
    corpus = "\n".join(text for _, text, _ in PLANTED)
    once = _masked(corpus)
    assert _masked(once) == once
    assert "--password [REDACTED]" in once and '"pwd": "[REDACTED]"' in once
    assert "redis://:[REDACTED]@cache.serving.svc:6379/0" in once
    assert "postgres://app:[REDACTED]@db.serving.svc:5432/app" in once
    assert "Authorization: Bearer [REDACTED]" in once and "AccountKey=[REDACTED];EndpointSuffix" in once


def test_json_documents_mask_by_structure() -> None:
    r = Redactor()
    pod = {
        "kind": "Pod",
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "args": ["--port", "8000", "--password", "hunter42", "--max-tokens", "512"],
                    "env": [{"name": "DB_PASSWORD", "value": "x1"}, {"name": "MODEL", "value": "llama"}],
                }
            ]
        },
    }
    secret = {"kind": "Secret", "metadata": {"name": "creds"}, "data": {"config.json": "eyJhdXRocyI6e319"}}
    out = r.json({"items": [pod, secret]})
    args = out["items"][0]["spec"]["containers"][0]["args"]
    assert args == ["--port", "8000", "--password", MASK, "--max-tokens", "512"]
    assert out["items"][0]["spec"]["containers"][0]["env"][1]["value"] == "llama"
    assert out["items"][1]["data"] == {"config.json": MASK} and out["items"][1]["metadata"]["name"] == "creds"
    assert redact_json({"key": "evidence-key", "value": "xid"})["value"] == "xid"


def test_known_url_credentials_are_masked_in_any_form() -> None:
    """A password given in --prometheus shows up in error messages outside URL form."""
    r = Redactor()
    r.add_url_credentials("http://admin:Pr0m%40pass@127.0.0.1")
    msg = "[prometheus] Prometheus http://admin:Pr0m%40pass@127.0.0.1: unreachable (nonnumeric port: 'Pr0m@pass@127.0.0.1')"
    out = r.text(msg)
    assert "Pr0m" not in out and out.count(MASK) == 2
    r.add_url_credentials("https://" + "ghp_" + "x" * 36 + "@github.com/org/repo")
    assert "ghp_" not in r.text("cloning https://ghp_" + "x" * 36 + "@github.com/org/repo")


def test_every_file_of_a_bundle_is_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs, JSON lines, Kubernetes objects, environment, the --prometheus/--exporter URLs: no planted
    secret in any member (manifest and problem messages included); ordinary text kept."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "node.log").write_text("\n".join([*ORDINARY, *(text for _, text, _ in PLANTED)]) + "\n")
    (logs / "app.jsonl").write_text(
        "\n".join(json.dumps({"ts": "2025-02-23T16:24:21Z", "msg": text}) for _, text, _ in PLANTED) + "\n"
    )
    pods = pod_list(
        pod(
            "vllm-0",
            "serving",
            [
                {
                    "name": "vllm",
                    "args": ["--api-key", "pod-args-k3y-0123456789"],
                    "env": [{"name": "HF_TOKEN", "value": "pod-env-t0ken-0123456789"}],
                }
            ],
        ),
        {"kind": "Secret", "metadata": {"name": "db"}, "data": {"uri": "cG9zdGdyZXM6Ly9hcHA6cGFzc0BkYg=="}},
    )
    (logs / "pods.json").write_text(json.dumps(pods))
    monkeypatch.setenv("HF_TOKEN", "env-hf-t0ken-0123456789")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    # No port: Python's URL parser stops at the password (nonnumeric port) before any connection, so
    # the password ends up in the problem messages, outside URL form too.
    prometheus = "http://admin:Pr0mPass-0123@127.0.0.1"
    exporter = "https://scrape:Exp0rterPass-4567@127.0.0.1/"
    out = tmp_path / "incident.tar.gz"
    summary = make_bundle(str(out), DiagnoseInputs(logs=[str(logs)], prometheus=prometheus, exporter=exporter))
    assert len(summary.manifest["problems"]) == 2, summary.manifest["problems"]
    members = archive_members(out)
    secrets = [s for _, _, planted in PLANTED for s in planted] + [
        "pod-args-k3y-0123456789",
        "pod-env-t0ken-0123456789",
        "cG9zdGdyZXM6Ly9hcHA6cGFzc0BkYg==",
        "env-hf-t0ken-0123456789",
        "Pr0mPass-0123",
        "Exp0rterPass-4567",
    ]
    for name, data in members.items():
        text = data.decode()
        for secret in secrets:
            assert secret not in text, f"{secret!r} leaked into {name}"
            assert json.dumps(secret)[1:-1] not in text, f"{secret!r} (JSON-escaped) leaked into {name}"
    node_log = members["gpuobs-bundle/inputs/logs/node.log"].decode()
    for line in ORDINARY:
        assert line in node_log
    manifest = json.loads(members["gpuobs-bundle/manifest.json"])
    assert manifest["inputs"]["prometheus"] == f"http://admin:{MASK}@127.0.0.1"
    # the readers name a URL without its credentials (rca/readers/http.py), so nothing is left to mask
    assert all(p.startswith(("[prometheus]", "[exporter]")) for p in manifest["problems"])
    assert manifest == summary.manifest
