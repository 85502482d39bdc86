"""The HTML report of `dlbridge check` (`report_html`): its markup read with html.parser
(escaping, stable attributes, order, no external resources), then the page in a real
browser, Debian's headless Chromium: a screenshot that is not blank, the DOM after its
JavaScript ran, no console message from the page, and the page with JavaScript disabled.

Where `chromium` is missing the browser tests are skipped, except under CI (CI=true), where
they fail: `make browser` installs it (`make python-test` does first).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser

import pytest

from _check_report_fixtures import HOSTILE, LONG_NAME, full_report, upgrade_v1, v1_report
from dlbridge.check.baseline import compare
from dlbridge.check.cli import exit_status
from dlbridge.check.report_html import PAIR_STATES, pair_state, render_html, section_ids

# ---- the markup -------------------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every element of a page: (tag, attributes, the ids of its open ancestors' tags)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list = []
        self.stack: list = []
        self.text: list = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes, [t for t, _ in self.stack]))
        if tag not in ("meta", "br", "wbr", "input", "link", "img"):
            self.stack.append((tag, attributes))

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                break

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


def _find(parsed, tag=None, **wanted) -> list:
    """Attributes of the elements with `tag` whose attributes have the values of `wanted`
    (True: present)."""
    found = []
    for element_tag, attributes, _ in parsed.elements:
        if tag is not None and element_tag != tag:
            continue
        if all(
            (key.replace("_", "-") in attributes)
            if value is True
            else attributes.get(key.replace("_", "-")) == value
            for key, value in wanted.items()
        ):
            found.append(attributes)
    return found


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(full_report())


def test_one_script_and_no_external_resource(page):
    parsed = _parse(page)
    assert len(_find(parsed, "script")) == 1
    for tag, attributes, _ in parsed.elements:
        assert "src" not in attributes, tag
        assert not (tag == "link" and "stylesheet" in attributes.get("rel", "")), tag
        href = attributes.get("href")
        if href is not None:
            assert href.startswith(("#", "https://")), href
    assert "@import" not in page and "url(" not in page
    csp = _find(parsed, "meta", http_equiv="Content-Security-Policy")
    assert csp and "default-src 'none'" in csp[0]["content"]


def test_hostile_strings_are_escaped():
    report = full_report()
    evil = "<script>alert(1)</script>"
    report["frameworks"][evil] = copy.deepcopy(report["frameworks"]["numpy"])
    report["summary"][evil] = report["summary"]["numpy"]
    report["versions"][evil] = '"><img src=x onerror=alert(2)>'
    report["matrix"].append(
        {"producer": evil, "consumer": "numpy", "error": f"crash: {evil} & more"}
    )
    report["rules"]["producer.keyword-only"]["cites"].append(
        {"document": evil, "section": "x", "url": "javascript:alert(3)"}
    )
    report["rules"]["producer.keyword-only"]["hint"] = "<b onmouseover=alert(4)>hint</b>"
    page = render_html(report)
    parsed = _parse(page)
    assert len(_find(parsed, "script")) == 1
    assert not _find(parsed, "img") and not _find(parsed, "b", onmouseover=True)
    assert "javascript:" not in " ".join(a.get("href", "") for _, a, _ in parsed.elements)
    text = "".join(parsed.text)
    assert evil in text
    assert "<script>alert('x')</script> & \"quoted\"" in text  # HOSTILE, as text
    assert "\x1b" not in page and "\x00" not in page
    sections = _find(parsed, "section", data_framework=evil)
    assert sections and re.fullmatch(r"fw-[A-Za-z0-9_-]+", sections[0]["id"])
    assert _find(parsed, "a", data_producer=evil, data_state="crash")
    assert HOSTILE.split("\x1b")[0].strip() in text


def test_header_names_every_version():
    report = full_report()
    parsed = _parse(render_html(report))
    text = " ".join("".join(parsed.text).split())
    for name, version in report["versions"].items():
        assert f"{name} {version}" in text
    assert f"{LONG_NAME} version unknown" in text
    assert "dlbridge 0.1.0" in text and "3.11.7" in text and "Linux-6.1.0" in text
    assert "version unknown" in render_html({**report, "versions": {}})


def test_matrix_cells(page):
    report = full_report()
    parsed = _parse(page)
    cells = _find(parsed, "a", data_state=True)
    assert len(cells) == len(report["matrix"])
    for pair in report["matrix"]:
        (cell,) = [
            c
            for c in cells
            if (c["data-producer"], c["data-consumer"]) == (pair["producer"], pair["consumer"])
        ]
        assert cell["data-state"] == pair_state(pair)
        assert cell["title"].startswith(f"{pair['producer']} → {pair['consumer']}: ")
        # Each cell leads to its pair's detail, in the page.
        assert _find(parsed, "article", id=cell["href"][1:])
    assert {c["data-state"] for c in cells} == set(PAIR_STATES)


def test_pair_states():
    base = full_report()["matrix"][0]
    assert pair_state(base) == "pass"
    assert pair_state({**base, "counts": {**base["counts"], "unchecked": 1}}) == "unchecked"
    assert pair_state({**base, "counts": {**base["counts"], "unsupported": 2}}) == "unsupported"
    assert pair_state({**base, "failures": {"x": "y"}}) == "fail"
    assert pair_state({"producer": "a", "consumer": "b", "error": "crash: x"}) == "crash"


def test_cells_are_labelled_not_only_coloured(page):
    labels = re.findall(r'<a class="cell [^"]*"[^>]*><span class="main">([^<]*)</span>', page)
    assert "✓ 36" in labels
    assert "✗ 2 · ✓ 30" in labels
    assert "✕ crash" in labels
    assert "✓ 32 · ⊘ 4" in labels
    assert "✓ 30 · ? 6" in labels


def test_framework_sections_and_rule_rows(page):
    report = full_report()
    parsed = _parse(page)
    ids = section_ids(report["frameworks"])
    for name, results in report["frameworks"].items():
        (section,) = _find(parsed, "section", id=ids[name])
        assert section["data-framework"] == name
        rows = [
            attributes
            for tag, attributes, _ in parsed.elements
            if tag == "tr" and attributes.get("id", "").startswith(ids[name] + "--")
        ]
        assert sorted((r["data-rule"], r["data-outcome"]) for r in rows) == sorted(
            (r["rule"], r["outcome"]) for r in results
        )
    assert ids[LONG_NAME] == f"fw-{LONG_NAME}"


def test_section_ids_are_unique_and_safe():
    ids = section_ids(["a.b", "a-b", "a b", "<x>", ""])
    assert list(ids.values()) == ["fw-a-b", "fw-a-b-2", "fw-a-b-3", "fw--x-", "fw--"]


def _rows(page: str, framework_id: str) -> list:
    return re.findall(
        rf'<tr id="{framework_id}--[^"]*" class="([^"]*)" data-rule="([^"]*)" '
        r'data-outcome="([^"]*)"',
        page,
    )


def test_findings_first_by_severity_causes_beneath_their_root(page):
    rows = _rows(page, f"fw-{LONG_NAME}")
    outcomes = [outcome for _, _, outcome in rows]
    findings = outcomes[: outcomes.index("pass")]
    assert findings[:2] == ["crash", "hang"]
    assert set(findings) == {"crash", "hang", "fail", "error"}
    assert set(outcomes[len(findings) :]) == {"pass", "n/a"}
    rules = [rule for _, rule, _ in rows]
    root = rules.index("producer.version-fields")
    assert rules[root + 1] == "producer.values"
    assert rows[root + 1][0] == "follower"
    assert 'data-caused-by="producer.version-fields"' in page
    assert "follows from <code>producer.version-fields</code>" in page


def test_passes_and_not_applicable_collapsed(page):
    parsed = _parse(page)
    for tag, attributes, ancestors in parsed.elements:
        if tag == "tr" and attributes.get("data-outcome") in ("pass", "n/a"):
            assert "details" in ancestors, attributes
        if tag == "tr" and attributes.get("data-outcome") in ("fail", "crash", "hang", "error"):
            assert "details" not in ancestors, attributes


def test_citations_hints_and_levels(page):
    parsed = _parse(page)
    links = [a["href"] for a in _find(parsed, "a", **{"class": "cite"})]
    assert (
        "https://data-apis.org/array-api/latest/API_specification/generated/"
        "array_api.from_dlpack.html" in links
    )
    text = "".join(parsed.text)
    assert "on BufferError for copy=True, import without copy" in text
    assert "SHOULD" in text and "MUST" in text


def test_baseline_regressions_first_known_marked():
    report = full_report()
    base = copy.deepcopy(report)
    base["frameworks"]["numpy"][5]["outcome"] = "pass"
    del base["frameworks"][LONG_NAME]
    compare(report, base)
    report["baseline"]["file"] = "baseline <old>.json"
    page = render_html(report)
    assert page.index('id="baseline"') < page.index('id="summary"')
    assert "baseline &lt;old&gt;.json" in page
    numpy_rows = _rows(page, "fw-numpy")
    assert [(c, r) for c, r, o in numpy_rows if o == "fail"] == [
        ("root", "producer.bad-stream-error-type"),  # new, so first
        ("root known", "consumer.copy-true-refused"),
    ]
    assert page.count('class="badge o-known">KNOWN') >= 1
    regressions = len(report["baseline"]["regressions"])
    assert f"{regressions} new finding(s)" in page


def test_renders_a_version_1_report():
    page = render_html(v1_report())
    parsed = _parse(page)
    assert _find(parsed, "section", id="fw-numpy")
    assert "conforms (SHOULD failures)" in page  # the verdict, counted from the results
    assert "report schema version 1" in page
    assert len(_find(parsed, "a", data_state="pass")) == 4
    assert render_html(upgrade_v1(v1_report())).count('data-rule="') == page.count('data-rule="')


def _tails(run: subprocess.CompletedProcess) -> str:
    return f"stderr tail:\n{run.stderr[-3000:]}\nstdout tail:\n{run.stdout[-2000:]}"


def test_renders_what_the_command_line_prints_today(tmp_path):
    """What `dlbridge check numpy --json` prints now, whatever its schema version: the page
    must render. The run must end as the checker's EXIT_STATUS says a run that checked
    something does (0 or 1, each with a report on stdout); 2 (nothing checked: numpy is
    installed here) or any other status (a crash) fails, as does output that is not JSON."""
    run = subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", "numpy", "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode in (0, 1), (
        f"dlbridge check numpy --json exited with status {run.returncode}, not 0 or 1 "
        f"(cli.EXIT_STATUS)\n{_tails(run)}"
    )
    assert "Traceback" not in run.stderr, _tails(run)
    try:
        report = json.loads(run.stdout)
    except ValueError as error:
        pytest.fail(f"dlbridge check numpy --json printed no JSON ({error})\n{_tails(run)}")
    # Exactly the status the report implies: 0 where it has no finding at the MUST level (numpy
    # 2.4 today: its two failures are SHOULD rules), 1 where it has one.
    assert run.returncode == exit_status(report, "must"), _tails(run)
    page = render_html(report)
    assert _find(_parse(page), "section", id="fw-numpy")
    (tmp_path / "cli.html").write_text(page, encoding="utf-8")


# ---- in a real browser ------------------------------------------------------------------------

#: A console message in Chromium's log (--enable-logging=stderr): level, text and source.
_CONSOLE = re.compile(r':INFO:CONSOLE[^\]]*\] "(?P<message>.*)", source: (?P<source>\S*)')


def console_messages(log: str, page_url: str) -> list:
    """The console messages (errors, warnings, logs, uncaught exceptions) that the page at
    `page_url` left in Chromium's stderr log. The report logs nothing, so each is a problem."""
    return [
        m.group("message")
        for m in _CONSOLE.finditer(log)
        if m.group("source").split("#")[0] == page_url.split("#", maxsplit=1)[0]
    ]


#: Why the browser tests cannot run where `chromium` is missing: a skip outside CI, a
#: failure under CI (CI=true), whose `make python-test` runs `make browser` first.
NO_CHROMIUM = (
    "browser tests need Debian's headless Chromium, and no `chromium` is on PATH: "
    "run `make browser` (apt-get install chromium)"
)


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(NO_CHROMIUM)
        pytest.skip(NO_CHROMIUM)
    return path


def _browse(chromium, tmp_path, url: str, *arguments: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            *arguments,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(full_report()), encoding="utf-8")
    return path


def _png_pixels(data: bytes) -> tuple:
    """(width, height, rows of pixel bytes) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, {}
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        chunks.setdefault(kind, []).append(data[position + 8 : position + 8 + length])
        position += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = width * step
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up = previous[x]
            corner = previous[x - step] if x >= step else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                a, b, c = abs(guess - left), abs(guess - up), abs(guess - corner)
                best = left if a <= b and a <= c else up if b <= c else corner
                line[x] = (line[x] + best) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, [[r[i : i + 3] for i in range(0, stride, step)] for r in rows]


def test_screenshot_is_not_blank(chromium, report_file, tmp_path):
    shot = tmp_path / "report.png"
    run = _browse(
        chromium, tmp_path, report_file.as_uri(), f"--screenshot={shot}", "--window-size=1400,2000"
    )
    assert shot.exists(), run.stderr[-2000:]
    data = shot.read_bytes()
    assert len(data) > 50_000, len(data)
    width, height, rows = _png_pixels(data)
    assert (width, height) == (1400, 2000)
    sample = [pixel for row in rows[::10] for pixel in row[::10]]
    colours = set(sample)
    assert len(colours) > 50, len(colours)
    background = max(colours, key=sample.count)
    assert sample.count(background) < 0.9 * len(sample)
    # The coloured grid: some pixels of a failing cell's red and a passing cell's green.
    assert any(r > 240 and 200 < g < 235 and 200 < b < 235 for r, g, b in colours)  # fail
    assert any(g > 240 and r < 225 and b < 235 for r, g, b in colours)  # pass


def test_dom_after_javascript(chromium, report_file, tmp_path):
    report = full_report()
    run = _browse(chromium, tmp_path, report_file.as_uri(), "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    parsed = _parse(run.stdout)
    html_tag = next(a for t, a, _ in parsed.elements if t == "html")
    assert "js" in html_tag.get("class", "").split(), "the script did not run to its end"
    ids = section_ids(report["frameworks"])
    for name in report["frameworks"]:
        assert _find(parsed, "section", id=ids[name], data_framework=name), name
    for pair in report["matrix"]:
        state = pair_state(pair)
        if state in ("fail", "crash"):
            assert _find(
                parsed,
                "a",
                data_producer=pair["producer"],
                data_consumer=pair["consumer"],
                data_state=state,
            ), pair
    assert console_messages(run.stderr, report_file.as_uri()) == []


def test_a_cell_link_opens_its_detail(chromium, report_file, tmp_path):
    """A link to a pair (#pair-N, what a click on its cell sets) shows its detail in the
    panel beside the grid."""
    page = report_file.read_text(encoding="utf-8")
    anchor = re.search(
        r'<a class="cell s-fail[^"]*" href="#(pair-\d+)" data-producer="numpy"', page
    ).group(1)
    url = f"{report_file.as_uri()}#{anchor}"
    run = _browse(chromium, tmp_path, url, "--dump-dom")
    panel = re.search(r'<div id="pair-panel"[^>]*>(.*?)</div>\s*<h3>', run.stdout, re.DOTALL)
    assert panel is not None and "hidden" not in panel.group(0).split(">")[0]
    assert "float64/contiguous" in panel.group(1) and "int8/transposed" in panel.group(1)
    assert re.search(rf'<a class="cell[^>]*href="#{anchor}"[^>]*aria-current="true"', run.stdout)
    assert console_messages(run.stderr, url) == []


def test_a_click_on_a_cell_opens_its_detail(chromium, report_file, tmp_path):
    """A click on the crashed pair's cell (by a script added after the page's own) fills the
    panel with that pair's detail and marks the cell, without leaving the page."""
    page = report_file.read_text(encoding="utf-8")
    click = "<script>document.querySelector('a.cell.s-crash').click();</script></body>"
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.replace("</body>", click), encoding="utf-8")
    run = _browse(chromium, tmp_path, clicked.as_uri(), "--dump-dom")
    panel = re.search(r'<div id="pair-panel"[^>]*>(.*?)</div>\s*<h3>', run.stdout, re.DOTALL)
    assert panel is not None and "hidden" not in panel.group(0).split(">")[0]
    assert "crash: the process died (signal 6)" in panel.group(1)
    assert '<button type="button" class="close">Close</button>' in panel.group(1)
    assert re.search(r'<a class="cell s-crash[^>]*aria-current="true"', run.stdout)
    assert console_messages(run.stderr, clicked.as_uri()) == []


def test_without_javascript_every_detail_is_there(chromium, report_file, tmp_path):
    """The page without its script (headless Chromium dumps no DOM with JavaScript disabled,
    and --disable-javascript leaves it on): every failing case is in it, nothing hidden but
    the panel the script fills."""
    page = report_file.read_text(encoding="utf-8")
    without = tmp_path / "no-script.html"
    without.write_text(re.sub(r"<script>.*?</script>", "", page, flags=re.DOTALL), encoding="utf-8")
    run = _browse(chromium, tmp_path, without.as_uri(), "--dump-dom")
    parsed = _parse(run.stdout)
    html_tag = next(a for t, a, _ in parsed.elements if t == "html")
    assert "js" not in html_tag.get("class", "")
    text = "".join(parsed.text)
    for pair in full_report()["matrix"]:
        for case, detail in pair.get("failures", {}).items():
            assert case in text and detail in text
    hidden = [a for _, a, _ in parsed.elements if "hidden" in a]
    assert [a.get("id") for a in hidden] == ["pair-panel"]


def test_console_detector_sees_an_error(chromium, tmp_path):
    """The detector of the tests above sees an uncaught exception and console.error."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><p>x</p><script>console.error('planted');"
        "window.addEventListener('load', function () { null.x; });</script>",
        encoding="utf-8",
    )
    run = _browse(chromium, tmp_path, page.as_uri(), "--dump-dom")
    messages = console_messages(run.stderr, page.as_uri())
    assert "planted" in messages
    assert any(m.startswith("Uncaught TypeError") for m in messages), messages
