"""The user guide builds as a site with every link checked, and the README's links hold.

mkdocs.yml sets ``strict: true`` and makes each link check a warning; these tests show that a
broken link, a broken anchor or a page left out of the navigation really fails the build (on a
copy of docs/), and check README.md, which MkDocs does not read, the way GitHub shows it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

pytest.importorskip("mkdocs", reason="mkdocs is in the test and docs extras")


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    # .stdout is all it said: the warnings and the verdict
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    return subprocess.run(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120
    )


@pytest.fixture
def copy(tmp_path) -> Path:
    """docs/ and mkdocs.yml copied, to be broken."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_the_guide_builds_strictly(tmp_path):
    built = _build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stdout
    assert "WARNING" not in built.stdout, built.stdout
    assert (tmp_path / "site" / "where-it-runs" / "index.html").is_file()


def test_the_copy_builds_before_it_is_broken(copy, tmp_path):
    built = _build(copy, tmp_path / "site")
    assert built.returncode == 0, built.stdout


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("[a page](no-such-page.md)", "'no-such-page.md', but the target is not found"),
        ("[an anchor](magics.md#no-such-anchor)", "does not contain an anchor '#no-such-anchor'"),
        ("[here](#no-such-heading)", "'#no-such-heading', but there is no such anchor on this"),
    ],
)
def test_a_broken_link_fails_the_build(copy, tmp_path, broken, said):
    page = copy / "docs" / "limitations.md"
    page.write_text(page.read_text() + f"\nSee {broken}.\n")
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0
    assert said in built.stdout, built.stdout
    assert "Aborted with 1 warnings in strict mode" in built.stdout, built.stdout


def test_a_page_left_out_of_the_navigation_fails_the_build(copy, tmp_path):
    (copy / "docs" / "orphan.md").write_text("# Orphan\n")
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0
    assert "orphan.md" in built.stdout, built.stdout


# -- README.md, as GitHub shows it ----------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def _without_code(text: str) -> str:
    """The text less its fenced code blocks and inline code, where links are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def github_anchors(markdown: str) -> set[str]:
    """The ids GitHub gives a Markdown file's headings: lower case, punctuation dropped (letters
    of any script kept), spaces made hyphens, repeats numbered."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in _without_fences(markdown).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading[1])  # a link: its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _without_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _readme_links() -> list[str]:
    return LINK.findall(_without_code(README.read_text()))


def test_github_anchors_are_made_as_github_makes_them():
    md = "# A `code` title: here\n## Voilà\n```\n# not a heading\n```\n## Voilà\n"
    assert github_anchors(md) == {"a-code-title-here", "voilà", "voilà-1"}


def test_every_relative_link_in_the_readme_names_a_file_and_heading_that_exist():
    links = [link for link in _readme_links() if not re.match(r"^[a-z]+:", link)]
    assert len(links) >= 20, links  # the guide's pages, the pictures, the front ends' details
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = (ROOT / path).resolve() if path else README
        if not target.is_file():
            broken.append(f"{link}: no file {target.relative_to(ROOT)}")
        elif anchor and anchor not in github_anchors(target.read_text()):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_the_readme_s_pictures_are_in_the_repository_and_described():
    pictures = [link for link in _readme_links() if link.endswith(".png")]
    assert pictures, "the README shows a picture"
    for picture in pictures:
        assert (ROOT / picture).is_file(), picture
    made = (ROOT / "docs" / "development.md").read_text()
    for picture in sorted((ROOT / "docs").glob("*.png")):  # each says how it is made
        assert f"`docs/{picture.name}`" in made, picture.name


def test_the_readme_reads_in_three_minutes():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, len(lines)
