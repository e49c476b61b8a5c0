"""schedlab's web dashboard (``schedlab dashboard``): an explorer of experiment results in the browser.

:mod:`.explorer` reads runs from results stores and summary JSONs and computes
the series the charts draw; :mod:`.server` serves the page, its JSON API and
the vendored chart library (Vega-Lite, in ``static/vendor``) on a local port.
"""
