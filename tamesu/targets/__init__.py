"""Target adapters, one module per target type; loaded lazily by type name."""

from __future__ import annotations

from tamesu.targets.base import TargetAdapter, TargetContext, target, targets

__all__ = ["TargetAdapter", "TargetContext", "target", "targets"]

targets.add("rest", "tamesu.targets.rest:RestTarget")
targets.add("model", "tamesu.targets.model:ModelTarget")
targets.add("realtime", "tamesu.targets.realtime:RealtimeTarget")
targets.add("pipecat", "tamesu.targets.pipecat:PipecatTarget")
targets.add("voice", "tamesu.targets.voice:VoiceTarget")
targets.add("twilio", "tamesu.targets.twilio:TwilioTarget")
targets.add("a2a", "tamesu.targets.a2a:A2ATarget")
targets.add("mcp", "tamesu.targets.mcp:McpTarget")
targets.add("grpc", "tamesu.targets.grpc:GrpcTarget")
targets.add("browser", "tamesu.targets.browser:BrowserTarget")
