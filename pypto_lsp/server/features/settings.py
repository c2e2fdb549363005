"""``workspace/didChangeConfiguration``: new settings for the core (:meth:`..core.Core.apply_settings`)."""

from __future__ import annotations

from lsprotocol import types

from ..config import SECTION
from ..core import Core
from ..lsp import PyptoServer


def register(ls: PyptoServer, core: Core) -> None:
    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if (
            settings is None
            or settings == {}
            or (isinstance(settings, dict) and SECTION not in settings and not set(settings) & {"runOn", "golden"})
        ):
            # the pull model: the notification only says "something changed"
            settings = await ls.pull_settings()
            if settings is None:
                return
        core.apply_settings(settings, "didChangeConfiguration")
