"""The explorer page in a real browser (Debian's Chromium, headless, through Playwright): it loads a results
store, draws a CDF per selected run, a toggle hides a series, the view is a link; screenshots for the docs."""

from __future__ import annotations

import os
from pathlib import Path

from tests.dashboard.conftest import browser_page

SHOTS = os.environ.get("SCHEDLAB_DASHBOARD_SHOTS")  # a folder: save the screenshots there (reports/dashboard)


def _wait_drawn(page) -> None:
    page.wait_for_function("document.body.dataset.ready === '1' && document.querySelectorAll('#cdf-chart svg').length > 0", timeout=20_000)


def _lines(page) -> int:
    return page.locator("#cdf-chart svg .mark-line path").count()


def test_explorer_draws_cdfs_toggles_a_series_and_links_the_view(store: Path, dashboard_of, chromium: str, tmp_path: Path) -> None:
    d = dashboard_of("--results", str(store))
    with browser_page(chromium) as (browser, page, errors):
        page.goto(d.url)
        _wait_drawn(page)
        assert page.locator("#runs-table tbody tr").count() == 3
        assert _lines(page) == 3  # the first three runs are selected at first
        assert page.locator("#percentiles tbody tr").count() == 3
        assert page.locator("#problems").is_hidden()
        page.wait_for_function("document.querySelectorAll('#load-chart svg .mark-rect path').length > 0", timeout=20_000)
        assert "Overall load per second" in page.locator("#load-note").inner_text()
        if SHOTS:
            page.screenshot(path=str(Path(SHOTS) / "explorer.png"), full_page=True)

        # a toggle hides a series, and shows it again
        first = page.locator("#series-toggles button").first
        page.evaluate("document.body.dataset.ready = '0'")
        first.click()
        _wait_drawn(page)
        assert _lines(page) == 2 and "off" in (first.get_attribute("class") or "")
        hidden = first.get_attribute("data-series")
        assert f"hide={hidden.replace('/', '%2F')}" in page.url

        # the view is a link: a new page on that URL shows the same selection, metric and hidden series
        page.select_option("#metric", "allocation_time")
        page.wait_for_function("location.hash.includes('metric=allocation_time')")
        url = page.url
        other = browser.new_page()
        other.goto(url)
        _wait_drawn(other)
        assert other.locator("#metric").input_value() == "allocation_time"
        assert _lines(other) == 2
        assert other.locator("#series-toggles button.off").count() == 1

        # and shows it again
        first = page.locator("#series-toggles button").first
        page.evaluate("document.body.dataset.ready = '0'")
        first.click()
        _wait_drawn(page)
        assert _lines(page) == 3 and "hide=" not in page.url
        assert errors == []


def test_bad_inputs_are_shown_on_the_page(store: Path, dashboard_of, chromium: str, tmp_path: Path) -> None:
    plain = tmp_path / "not-a-store"
    plain.mkdir()
    d = dashboard_of("--results", str(store), "--results", str(plain))
    with browser_page(chromium) as (_browser, page, _errors):
        page.goto(d.url)
        _wait_drawn(page)
        text = page.locator("#problems").inner_text()
        assert f"{plain}: not a results store" in text
        assert _lines(page) == 3  # the good store still loads
