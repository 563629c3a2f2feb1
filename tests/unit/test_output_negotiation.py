"""The gateway remembers what an Accept header negotiates (clients send the same
one on every request): what it remembers is per request shape, and a refusal is
made again each time rather than remembered as an answer."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from services.gateway import output, paths
from services.gateway.negotiation import PARTIAL_LIST, Output
from strata.api.errors import StatusError

_AS_PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


def _negotiated(path: str, accept: str) -> Output:
    request = make_mocked_request("GET", path, headers={"Accept": accept})
    info = paths.info_of(request)
    assert info is not None
    return output._negotiated(request, info)[0]


def test_a_remembered_accept_is_negotiated_per_request_shape() -> None:
    one = "/api/v1/namespaces/n/configmaps/a"
    listing = "/api/v1/namespaces/n/configmaps"
    for _ in range(2):
        # A PartialObjectMetadataList is no form of one object: 406, every time.
        with pytest.raises(StatusError) as refused:
            _negotiated(one, _AS_PARTIAL_LIST)
        assert refused.value.code == 406
        assert _negotiated(listing, _AS_PARTIAL_LIST) == Output("application/json", PARTIAL_LIST)
    assert _negotiated(one, "application/json") == Output()
