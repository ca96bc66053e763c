"""What the built sdist and wheel hold: the package and its licence, never local state."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_sdist_and_wheel_hold_the_package_and_nothing_local(tmp_path: Path) -> None:
    # A secret where the README's setup step writes them: it must never be packaged.
    secrets = ROOT / "deploy" / "secrets"
    planted = secrets / "packaging-test.key"
    made = not secrets.exists()
    secrets.mkdir(parents=True, exist_ok=True)
    planted.write_text("not for distribution")
    try:
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
            check=True,
            capture_output=True,
            timeout=300,
        )
    finally:
        planted.unlink()
        if made:
            secrets.rmdir()
    [sdist] = tmp_path.glob("*.tar.gz")
    [wheel] = tmp_path.glob("*.whl")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= in_sdist
    assert "src/durable_tools/py.typed" in in_sdist
    assert "src/durable_tools/inbox/templates/call.html" in in_sdist or any(
        n.startswith("src/durable_tools/inbox/templates/") for n in in_sdist
    )
    for local in ("deploy/", "tests/", "bench/", "examples/", ".venv/", "docs/"):
        assert not any(n.startswith(local) for n in in_sdist), local
    assert "durable_tools/py.typed" in in_wheel
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in in_wheel)
    assert not any(n.startswith(("tests/", "deploy/")) for n in in_wheel)
    assert not any("packaging-test.key" in n for n in in_sdist | in_wheel)
