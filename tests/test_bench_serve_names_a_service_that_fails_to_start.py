"""`mpcbandit bench serve` names what stopped it: a service whose parties exit before they
listen (the launcher's reason and where the logs are, not a later symptom of the stop), and a
config override the service cannot take (the key, before any service starts)."""

from click.testing import CliRunner

from mpcbandit.cli import main

TINY = ["bench", "serve", "--nets", "loopback", "--rates", "50", "--max-batch", "8", "--n", "10"]


def test_a_service_whose_parties_exit_before_listening_is_named_with_its_logs(tmp_path):
    # beyond loopback without serve.token_file every party refuses to start (docs/serve.md)
    result = CliRunner().invoke(main, [*TINY, "--set", 'serve.bind="0.0.0.0"',
                                       "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    service = tmp_path / "services" / "loopback-r50-b8"
    assert f"the service in {service}: the launcher exited 1 before its endpoints.json" in (
        result.output)
    assert "exited before listening" in result.output and str(service / "logs") in result.output
    assert not (tmp_path / "serve.csv").exists()


def test_an_override_the_service_cannot_take_is_named_before_any_service_starts(tmp_path):
    result = CliRunner().invoke(main, [*TINY, "--set", "serve.max_batch=0",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert "bench serve: --set: config key 'serve.max_batch'" in result.output
    assert not (tmp_path / "services").exists()
