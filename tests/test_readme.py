"""The README's test command is the one CI runs, character for character."""

from __future__ import annotations

from fixture_support import ROOT


def test_ci_runs_the_readme_test_command() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = (ROOT / "README.md").read_text()
    test_command = next(line for line in ci_lines if "pytest" in line)
    assert f"```bash\n{test_command}\n```" in readme
