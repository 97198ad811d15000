"""The app's routes, as the OpenAPI description lists them: a route lost (or renamed) when the
routers are reassembled fails here. The page and its files, outside the description, too."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from fastapi.testclient import TestClient

from paretorag.server import create_app

from ..server_util import build_index, write_corpus

# (verb, path) -> operationId, as GET /openapi.json describes them
ROUTES = {
    ("POST", "/query"): "query_query_post",
    ("POST", "/query/stream"): "query_stream_query_stream_post",
    ("POST", "/documents"): "add_documents_documents_post",
    ("GET", "/documents"): "list_documents_documents_get",
    ("DELETE", "/documents/{doc_id}"): "delete_document_documents__doc_id__delete",
    ("GET", "/jobs/{job_id}"): "get_job_jobs__job_id__get",
    ("GET", "/methods"): "methods_methods_get",
    ("GET", "/stats"): "stats_stats_get",
    ("GET", "/healthz"): "healthz_healthz_get",
    ("GET", "/metrics"): "prometheus_metrics_get",
    ("GET", "/v1/models"): "openai_models_v1_models_get",
    ("GET", "/v1/models/{model}"): "openai_model_v1_models__model__get",
    ("POST", "/v1/chat/completions"): "openai_chat_v1_chat_completions_post",
    ("GET", "/api/version"): "ollama_version_api_version_get",
    ("GET", "/api/tags"): "ollama_tags_api_tags_get",
    ("POST", "/api/chat"): "ollama_chat_api_chat_post",
    ("GET", "/graph/structures"): "structures_graph_structures_get",
    ("GET", "/graph/entities"): "entities_graph_entities_get",
    ("GET", "/graph/relations"): "relations_graph_relations_get",
    ("GET", "/graph/neighborhood"): "neighborhood_graph_neighborhood_get",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("routes")
    return build_index(root / "ix", write_corpus(root / "src"))


@pytest.fixture
def app(index):
    return create_app(index)  # one per test: leaving the client closes its service


def test_the_openapi_description_lists_every_route(app):
    with TestClient(app) as c:
        schema = c.get("/openapi.json").json()
    got = {
        (verb.upper(), path): op["operationId"]
        for path, ops in schema["paths"].items()
        for verb, op in ops.items()
    }
    assert got == ROUTES
    upload = schema["paths"]["/documents"]["post"]["requestBody"]["content"]
    assert set(upload) == {"multipart/form-data", "application/json"}
    assert schema["components"]["schemas"]["Record"]["required"] == ["text"]
    assert set(schema["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader"}


def test_the_page_its_files_and_the_counted_route_templates(app):
    with TestClient(app) as c:
        page = c.get("/")
        script = c.get("/static/app.js")
        missing = c.get("/jobs/no-such-job")
        unknown = c.get("/no/such/route")
        text = c.get("/metrics").text
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert script.status_code == 200 and script.text
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "job_id"
    assert unknown.status_code == 404 and "see /docs for the endpoints" in unknown.json()["error"]["message"]
    # requests are counted by their route's template, whichever router holds it
    assert 'paretorag_requests_total{route="/jobs/{job_id}",verb="GET",status="404"} 1' in text
    assert 'paretorag_requests_total{route="/static",verb="GET",status="200"} 1' in text
    assert 'paretorag_requests_total{route="/",verb="GET",status="200"} 1' in text
