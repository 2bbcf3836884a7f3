"""docs/serve.md's API reference ("Requests and answers", "Status codes") against the code, both
ways: every route, request field and status code the code has is in the docs, and the docs name
none it lacks. The code's side is read from the code itself: the routes from the aiohttp app the
server builds, each route's fields from what its parser asks for, the statuses from the replies
the serve package writes and those aiohttp's router gives for an unknown route or method."""

import ast
import json
import re

import pytest

from conftest import REPO
from serve_support import LiveService

DOC = REPO / "docs" / "serve.md"
SERVE_PACKAGE = REPO / "mpcbandit" / "serve"


def _section(heading: str) -> str:
    """The text of docs/serve.md under a `## ` heading, up to the next one (its `###` within)."""
    text = DOC.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _table(text: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the markdown table whose header row starts with `header`."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[first + 2:]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _documented_routes() -> dict[tuple[str, str], set[str]]:
    """(method, path) -> the body fields docs/serve.md lists for it."""
    routes = {}
    for row in _table(_section("Requests and answers"), "| route |"):
        method, path = row[0].strip("`").split()
        routes[method, path] = set(re.findall(r"`(\w+)`", row[2]))
    return routes


def _documented_statuses() -> set[int]:
    """The status codes docs/serve.md's table under "Status codes" lists."""
    text = _section("Requests and answers")
    rows = _table(text[text.index("### Status codes"):], "| status |")
    return {int(row[0]) for row in rows}


@pytest.fixture(scope="module")
def party(tmp_path_factory):
    """A party's API that takes every route (contexts, decisions, rewards), served live."""
    live = LiveService(tmp_path_factory.mktemp("wal") / "party.wal")
    yield live
    live.close()


def _served_routes(party) -> set[tuple[str, str]]:
    # aiohttp adds a HEAD beside every GET route by itself: not a route the server declares
    return {(route.method, route.resource.canonical)
            for route in party.running.runner.app.router.routes() if route.method != "HEAD"}


def _parsed_fields(party, path: str) -> set[str]:
    """The body fields a POST route's parser asks for: post {} and add each field it says is
    missing (as null, so that the request is never a valid one) until none is."""
    body = {}
    for _ in range(20):
        status, answer, _ = party.call("POST", path, body)
        field = answer.get("field") if status == 400 else None
        if field is None or answer["error"] != f"field '{field}': missing":
            return set(body)
        body[field] = None
    raise AssertionError(f"{path}: still a field missing after {sorted(body)}")


def _replied_statuses() -> set[int]:
    """Every literal status the serve package answers with: Reply(N, ...) and error(N, ...)."""
    statuses = set()
    for module in SERVE_PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("Reply", "error") and node.args
                    and isinstance(node.args[0], ast.Constant)):
                statuses.add(node.args[0].value)
    return statuses


def test_docs_serve_names_every_route_the_server_serves_and_no_other(party):
    """The routes of docs/serve.md's table are the (method, path) pairs the app routes."""
    documented, served = set(_documented_routes()), _served_routes(party)
    assert served - documented == set(), "routes the code serves that docs/serve.md omits"
    assert documented - served == set(), "routes docs/serve.md names that the code lacks"


def test_docs_serve_names_every_field_each_route_parses_and_no_other(party):
    """Each route's body fields in docs/serve.md are those its parser asks for (a GET: none)."""
    for (method, path), fields in _documented_routes().items():
        # a GET route reads no body (health, metrics): it has no fields to ask for
        parsed = _parsed_fields(party, path) if method == "POST" else set()
        assert fields == parsed, f"{method} {path}: docs/serve.md lists {sorted(fields)}, " \
                                 f"the code parses {sorted(parsed)}"


def test_docs_serve_names_every_status_the_api_answers_and_no_other(party):
    """The status table of docs/serve.md lists the statuses the serve package replies with and
    those aiohttp's router gives (an unknown route, a known route with the wrong method)."""
    unknown_route = party.call("GET", "/v1/no-such-route")[0]
    wrong_method = party.call("DELETE", "/v1/contexts")[0]
    answered = _replied_statuses() | {unknown_route, wrong_method}
    documented = _documented_statuses()
    assert answered - documented == set(), "statuses the code answers that docs/serve.md omits"
    assert documented - answered == set(), "statuses docs/serve.md names that the code lacks"


def test_the_requests_of_docs_serve_send_the_fields_their_route_takes():
    """Every `curl -d` body in "Requests and answers" holds the fields its route's row lists."""
    routes = _documented_routes()
    lines = _section("Requests and answers").replace("\\\n", " ").splitlines()
    posts = [(re.search(r"http://\S+?(/v1/\w+)", line)[1], re.search(r"-d '(\{.*?\})'", line)[1])
             for line in lines if line.startswith("$ curl") and " -d '" in line]
    assert posts, "no request with a body found in docs/serve.md"
    for path, body in posts:
        assert set(json.loads(body)) == routes["POST", path], f"{path}: {body}"
