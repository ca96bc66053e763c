"""Google docstrings: description and per-parameter descriptions."""

from __future__ import annotations

from durable_tools.tools._docstrings import parse_docstring


def test_description_and_args() -> None:
    doc = """Get the weather for a city.

    Uses the national service; falls back to a cache.

    Args:
        city: The city name,
            as the user wrote it.
        units (str): `metric` or `imperial`.
        *extra: Ignored.

    Returns:
        The forecast.

    Raises:
        ValueError: never documented as an argument.
    """
    parsed = parse_docstring(doc)
    assert parsed.description == (
        "Get the weather for a city.\n\nUses the national service; falls back to a cache."
    )
    assert parsed.params == {
        "city": "The city name, as the user wrote it.",
        "units": "`metric` or `imperial`.",
        "extra": "Ignored.",
    }


def test_empty_and_missing_docstrings() -> None:
    assert parse_docstring(None).description == ""
    assert parse_docstring("").params == {}
    assert parse_docstring("One line.").description == "One line."
