"""The authentication's refusals say what happened, the right way round."""

from __future__ import annotations

import pytest

from schedlab.services.auth import AuthError, Signer, Verifier, skew_text

SECRET = "s" * 32


@pytest.mark.parametrize(("sent", "want"), [(880.0, "sent 120.0 s ago"), (1045.0, "sent 45.0 s in the future")])
def test_a_stale_signature_says_how_long_ago_it_was_sent(sent: float, want: str) -> None:
    body = b"{}"
    headers = Signer(SECRET, "gm:0", clock=lambda: sent).headers(body)
    with pytest.raises(AuthError) as e:
        Verifier(SECRET, clock=lambda: 1000.0).verify(headers, body)
    assert e.value.reason == "stale"
    assert e.value.detail.startswith(want), e.value.detail
    assert skew_text(880.0, 1000.0) == "sent 120.0 s ago"
