"""Where ctxasm's spans go, read from the environment; the console exporter writes to standard error."""

from __future__ import annotations

import pytest

from ctxasm.services import telemetry
from ctxasm.errors import ConfigError

VARIABLES = ("CTXASM_TELEMETRY", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
             "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "CTXASM_TELEMETRY_CONTENT")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    telemetry.use_tracer_provider(None)
    yield
    telemetry.use_tracer_provider(None)


def test_exporter_setting(monkeypatch):
    assert telemetry.exporter_setting() is None and not telemetry.content_allowed()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert telemetry.exporter_setting() == "otlp"
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert telemetry.exporter_setting() == "console"
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert telemetry.exporter_setting() is None
    monkeypatch.setenv("CTXASM_TELEMETRY", "otlp")  # ctxasm's own setting wins
    assert telemetry.exporter_setting() == "otlp"
    monkeypatch.setenv("CTXASM_TELEMETRY", "off")
    assert telemetry.exporter_setting() is None
    monkeypatch.setenv("CTXASM_TELEMETRY", "jaeger")
    with pytest.raises(ConfigError, match="CTXASM_TELEMETRY 'jaeger' is not one of console, otlp, off"):
        telemetry.exporter_setting()
    monkeypatch.setenv("CTXASM_TELEMETRY_CONTENT", "yes")
    assert telemetry.content_allowed()


def test_without_a_configured_exporter_spans_do_not_record():
    with telemetry.tracer().start_as_current_span("x") as span:
        assert not span.is_recording()


def test_console_exporter_writes_spans_to_standard_error(monkeypatch, capsys):
    monkeypatch.setenv("CTXASM_TELEMETRY", "console")

    @telemetry.traced("ctxasm.test", lambda span, result, *args: span.set_attribute("ctxasm.result", result))
    def work(value: int) -> int:
        return value * 2

    assert work(21) == 42
    out, err = capsys.readouterr()
    assert out == "" and '"name": "ctxasm.test"' in err and '"ctxasm.result": 42' in err


def test_otlp_without_its_exporter_package_names_it(monkeypatch):
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the OTLP exporter package is installed here")
    monkeypatch.setenv("CTXASM_TELEMETRY", "otlp")
    with pytest.raises(ConfigError, match="opentelemetry-exporter-otlp-proto-http"):
        telemetry.tracer()
