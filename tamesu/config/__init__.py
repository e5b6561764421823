"""The suite and tamesu.yaml models, and the JSON Schema built from them.

Every name here is imported on first use: ``import tamesu.config.loader`` (what ``tamesu validate``
needs) must not pay for pydantic and the model classes, which importing this package would
otherwise do before any of its modules. Loading files with line numbers lives in
``tamesu.config.loader``; the registries of target types and assertion kinds in
``tamesu.config.kinds``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.config.assertion import (
        Assertion,
        OnTurn,
    )
    from tamesu.config.assertions.conversation import (
        CapturedAssertion,
        Delegation,
        HandoffAssertion,
        IntCompare,
        MetricAssertion,
    )
    from tamesu.config.assertions.golden import (
        GoldenAssertion,
    )
    from tamesu.config.assertions.graded import (
        Evaluator,
        GroundedAssertion,
        GroundedContext,
        Judge,
        Similar,
    )
    from tamesu.config.assertions.response import (
        JSONPathAssertion,
    )
    from tamesu.config.assertions.state import (
        StateCommand,
        StateHTTP,
    )
    from tamesu.config.assertions.tools import (
        ToolCall,
        ToolSequence,
    )
    from tamesu.config.assertions.voice import (
        DTMFAssertion,
        Matches,
        StringList,
    )
    from tamesu.config.common import (
        ConfigModel,
        Duration,
        Hook,
        Hooks,
        HTTPTrigger,
        RESTOpen,
        RESTSession,
    )
    from tamesu.config.kinds import (
        assertion_kinds,
        target_kinds,
    )
    from tamesu.config.project import (
        Budgets,
        Defaults,
        LiveKitConfig,
        ModelFallback,
        ModelRetry,
        Models,
        Project,
        ProjectDefaults,
        ProjectHooks,
        ProviderConfig,
        SipConfig,
        effective_budgets,
        effective_defaults,
        effective_models,
        effective_secrets,
        effective_vars,
    )
    from tamesu.config.replay import Replay, ReplayTurn
    from tamesu.config.schema import (
        build_schema,
        dump_schema,
    )
    from tamesu.config.suite import (
        Behaviors,
        Capture,
        Case,
        Counterpart,
        Fuzz,
        Persona,
        Quarantine,
        RedTeam,
        RemoteAgent,
        RemoteExtended,
        RemoteReply,
        RemoteSkill,
        Scenario,
        ScriptFile,
        ScriptStep,
        Step,
        Suite,
        Test,
    )
    from tamesu.config.target import (
        Target,
        TargetConfig,
        parse_target,
    )
    from tamesu.config.target_base import (
        ConnectConfig,
        HandoffSignal,
    )
    from tamesu.targets.a2a.settings import (
        A2ATarget,
        Push,
    )
    from tamesu.targets.browser.settings import (
        BrowserAuth,
        BrowserMock,
        BrowserOptions,
        BrowserTarget,
    )
    from tamesu.targets.grpc.settings import (
        GrpcTarget,
    )
    from tamesu.targets.livekit.settings import (
        Dispatch,
        LivekitTarget,
    )
    from tamesu.targets.mcp.settings import (
        McpTarget,
    )
    from tamesu.targets.model.settings import (
        ModelTarget,
        ToolDef,
    )
    from tamesu.targets.pipecat.settings import (
        PipecatTarget,
    )
    from tamesu.targets.realtime.settings import (
        RealtimeTarget,
    )
    from tamesu.targets.rest.settings import (
        HandshakeStep,
        RESTListen,
        RESTPoll,
        RESTRequest,
        RESTResponse,
        RestTarget,
    )
    from tamesu.targets.sip.settings import (
        SipTarget,
        Trigger,
    )
    from tamesu.targets.twilio.settings import (
        TwilioTarget,
    )
    from tamesu.targets.voice.settings import (
        VoiceAudio,
        VoiceMessages,
        VoiceTarget,
    )

_LAZY: dict[str, str] = {
    "Assertion": "tamesu.config.assertion",
    "OnTurn": "tamesu.config.assertion",
    "CapturedAssertion": "tamesu.config.assertions.conversation",
    "Delegation": "tamesu.config.assertions.conversation",
    "HandoffAssertion": "tamesu.config.assertions.conversation",
    "IntCompare": "tamesu.config.assertions.conversation",
    "MetricAssertion": "tamesu.config.assertions.conversation",
    "DTMFAssertion": "tamesu.config.assertions.voice",
    "Matches": "tamesu.config.assertions.voice",
    "StringList": "tamesu.config.assertions.voice",
    "Evaluator": "tamesu.config.assertions.graded",
    "GroundedAssertion": "tamesu.config.assertions.graded",
    "GroundedContext": "tamesu.config.assertions.graded",
    "Judge": "tamesu.config.assertions.graded",
    "Similar": "tamesu.config.assertions.graded",
    "GoldenAssertion": "tamesu.config.assertions.golden",
    "JSONPathAssertion": "tamesu.config.assertions.response",
    "StateCommand": "tamesu.config.assertions.state",
    "StateHTTP": "tamesu.config.assertions.state",
    "ToolCall": "tamesu.config.assertions.tools",
    "ToolSequence": "tamesu.config.assertions.tools",
    "ConfigModel": "tamesu.config.common",
    "Duration": "tamesu.config.common",
    "Hook": "tamesu.config.common",
    "Hooks": "tamesu.config.common",
    "HTTPTrigger": "tamesu.config.common",
    "RESTOpen": "tamesu.config.common",
    "RESTSession": "tamesu.config.common",
    "assertion_kinds": "tamesu.config.kinds",
    "target_kinds": "tamesu.config.kinds",
    "Budgets": "tamesu.config.project",
    "Defaults": "tamesu.config.project",
    "LiveKitConfig": "tamesu.config.project",
    "ModelFallback": "tamesu.config.project",
    "ModelRetry": "tamesu.config.project",
    "Models": "tamesu.config.project",
    "Project": "tamesu.config.project",
    "ProjectDefaults": "tamesu.config.project",
    "ProjectHooks": "tamesu.config.project",
    "ProviderConfig": "tamesu.config.project",
    "SipConfig": "tamesu.config.project",
    "effective_budgets": "tamesu.config.project",
    "effective_defaults": "tamesu.config.project",
    "effective_models": "tamesu.config.project",
    "effective_secrets": "tamesu.config.project",
    "effective_vars": "tamesu.config.project",
    "build_schema": "tamesu.config.schema",
    "dump_schema": "tamesu.config.schema",
    "Behaviors": "tamesu.config.suite",
    "Capture": "tamesu.config.suite",
    "Case": "tamesu.config.suite",
    "Counterpart": "tamesu.config.suite",
    "Fuzz": "tamesu.config.suite",
    "Persona": "tamesu.config.suite",
    "Quarantine": "tamesu.config.suite",
    "RedTeam": "tamesu.config.suite",
    "RemoteAgent": "tamesu.config.suite",
    "RemoteExtended": "tamesu.config.suite",
    "RemoteReply": "tamesu.config.suite",
    "RemoteSkill": "tamesu.config.suite",
    "Replay": "tamesu.config.replay",
    "ReplayTurn": "tamesu.config.replay",
    "Scenario": "tamesu.config.suite",
    "ScriptFile": "tamesu.config.suite",
    "ScriptStep": "tamesu.config.suite",
    "Step": "tamesu.config.suite",
    "Suite": "tamesu.config.suite",
    "Test": "tamesu.config.suite",
    "Target": "tamesu.config.target",
    "TargetConfig": "tamesu.config.target",
    "parse_target": "tamesu.config.target",
    "ConnectConfig": "tamesu.config.target_base",
    "HandoffSignal": "tamesu.config.target_base",
    "HandshakeStep": "tamesu.targets.rest.settings",
    "RESTListen": "tamesu.targets.rest.settings",
    "RESTPoll": "tamesu.targets.rest.settings",
    "RESTRequest": "tamesu.targets.rest.settings",
    "RESTResponse": "tamesu.targets.rest.settings",
    "RestTarget": "tamesu.targets.rest.settings",
    "ModelTarget": "tamesu.targets.model.settings",
    "ToolDef": "tamesu.targets.model.settings",
    "RealtimeTarget": "tamesu.targets.realtime.settings",
    "PipecatTarget": "tamesu.targets.pipecat.settings",
    "VoiceAudio": "tamesu.targets.voice.settings",
    "VoiceMessages": "tamesu.targets.voice.settings",
    "VoiceTarget": "tamesu.targets.voice.settings",
    "TwilioTarget": "tamesu.targets.twilio.settings",
    "Dispatch": "tamesu.targets.livekit.settings",
    "LivekitTarget": "tamesu.targets.livekit.settings",
    "SipTarget": "tamesu.targets.sip.settings",
    "Trigger": "tamesu.targets.sip.settings",
    "McpTarget": "tamesu.targets.mcp.settings",
    "A2ATarget": "tamesu.targets.a2a.settings",
    "Push": "tamesu.targets.a2a.settings",
    "GrpcTarget": "tamesu.targets.grpc.settings",
    "BrowserAuth": "tamesu.targets.browser.settings",
    "BrowserMock": "tamesu.targets.browser.settings",
    "BrowserOptions": "tamesu.targets.browser.settings",
    "BrowserTarget": "tamesu.targets.browser.settings",
}
"""Public name -> the module that defines it."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tamesu.config' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "A2ATarget",
    "Assertion",
    "Behaviors",
    "BrowserAuth",
    "BrowserMock",
    "BrowserOptions",
    "BrowserTarget",
    "Budgets",
    "Capture",
    "CapturedAssertion",
    "Case",
    "ConfigModel",
    "ConnectConfig",
    "Counterpart",
    "DTMFAssertion",
    "Defaults",
    "Delegation",
    "Dispatch",
    "Duration",
    "Evaluator",
    "Fuzz",
    "GoldenAssertion",
    "GroundedAssertion",
    "GroundedContext",
    "GrpcTarget",
    "HTTPTrigger",
    "HandoffAssertion",
    "HandoffSignal",
    "HandshakeStep",
    "Hook",
    "Hooks",
    "IntCompare",
    "JSONPathAssertion",
    "Judge",
    "LiveKitConfig",
    "LivekitTarget",
    "Matches",
    "McpTarget",
    "MetricAssertion",
    "ModelFallback",
    "ModelRetry",
    "ModelTarget",
    "Models",
    "OnTurn",
    "Persona",
    "PipecatTarget",
    "Project",
    "ProjectDefaults",
    "ProjectHooks",
    "ProviderConfig",
    "Push",
    "Quarantine",
    "RESTListen",
    "RESTOpen",
    "RESTPoll",
    "RESTRequest",
    "RESTResponse",
    "RESTSession",
    "RealtimeTarget",
    "RedTeam",
    "RemoteAgent",
    "RemoteExtended",
    "RemoteReply",
    "RemoteSkill",
    "Replay",
    "ReplayTurn",
    "RestTarget",
    "Scenario",
    "ScriptFile",
    "ScriptStep",
    "Similar",
    "SipConfig",
    "SipTarget",
    "StateCommand",
    "StateHTTP",
    "Step",
    "StringList",
    "Suite",
    "Target",
    "TargetConfig",
    "Test",
    "ToolCall",
    "ToolDef",
    "ToolSequence",
    "Trigger",
    "TwilioTarget",
    "VoiceAudio",
    "VoiceMessages",
    "VoiceTarget",
    "assertion_kinds",
    "build_schema",
    "dump_schema",
    "effective_budgets",
    "effective_defaults",
    "effective_models",
    "effective_secrets",
    "effective_vars",
    "parse_target",
    "target_kinds",
]
