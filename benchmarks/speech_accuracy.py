"""Which offline STT engine hears agents best on each kind of line, and what it costs in CPU.

    python benchmarks/speech_engines.py --accuracy           # about ten minutes on two cores
    python benchmarks/speech_engines.py --accuracy --quick   # a third of the sentences

Each engine (Whisper tiny.en and Whisper base, as tamesu ships them, beam 1, int8) transcribes 24
known support sentences one turn at a time, as the listener asks for them, spoken by

- Piper ``joe`` (natural speech) and espeak-ng ``en-us`` (a robotic agent voice), and
- espeak-ng in Spanish, German and French (8 sentences each; base only: tiny.en is English only),

through each line an agent's audio reaches tamesu on: ``16k`` (a voice socket, PCM16 at 16 kHz),
``8k_ulaw`` (Twilio media streams and SIP: 8 kHz G.711 mu-law) and ``pstn`` (the ``pstn`` line
model: band limits, mu-law, loss). The word error rate is scored on spoken forms
(``tamesu.spoken``: "thirty" and "30" are one word), so it counts what a ``wait_for`` would miss.
CPU is ``time.process_time`` over the transcriptions (every thread), per second of audio.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "speech_accuracy.json"

ENGLISH = (
    "Thank you for calling Mochi Shoes, how can I help you today?",
    "Please enter your order number followed by the pound key.",
    "I can see your order, it was shipped on Monday and should arrive by Thursday.",
    "Returns are accepted within thirty days of delivery.",
    "Your refund of forty nine dollars will reach your card in five to seven business days.",
    "For billing, press two. For technical support, press three.",
    "I'm sorry to hear that the shoes arrived damaged.",
    "Could you please confirm the email address on your account?",
    "I have sent a prepaid return label to your email.",
    "Your order number is one zero zero one.",
    "Is there anything else I can help you with?",
    "I'm transferring you to a specialist now, please hold.",
    "Unfortunately we cannot accept returns after thirty days.",
    "The replacement pair will be shipped tomorrow morning.",
    "Can you tell me the size and colour you would like instead?",
    "Your subscription has been cancelled and you will not be charged again.",
    "I have updated your delivery address.",
    "Our store is open from nine in the morning to six in the evening.",
    "To hear these options again, press the star key.",
    "I can offer you a twenty percent discount on your next order.",
    "Please hold while I look up your account.",
    "The package was delivered to your front door at two fifteen this afternoon.",
    "Your verification code is four eight one five.",
    "Thank you for calling, have a great day.",
)

OTHER = {
    "es": (
        "Gracias por llamar a Mochi, ¿en qué puedo ayudarle?",
        "Por favor, introduzca su número de pedido.",
        "Su pedido llegará en tres días.",
        "Aceptamos devoluciones durante treinta días.",
        "Para facturación, pulse dos.",
        "Le he enviado una etiqueta de devolución por correo.",
        "Lo siento, los zapatos llegaron dañados.",
        "Gracias por su llamada, que tenga un buen día.",
    ),
    "de": (
        "Danke für Ihren Anruf bei Mochi, wie kann ich Ihnen helfen?",
        "Bitte geben Sie Ihre Bestellnummer ein.",
        "Ihre Bestellung kommt in drei Tagen an.",
        "Rücksendungen sind innerhalb von dreißig Tagen möglich.",
        "Für die Rechnung drücken Sie bitte die Zwei.",
        "Ich habe Ihnen ein Rücksendeetikett geschickt.",
        "Es tut mir leid, dass die Schuhe beschädigt angekommen sind.",
        "Vielen Dank für Ihren Anruf und einen schönen Tag.",
    ),
    "fr": (
        "Merci d'avoir appelé Mochi, comment puis-je vous aider ?",
        "Veuillez saisir votre numéro de commande.",
        "Votre commande arrivera dans trois jours.",
        "Les retours sont acceptés pendant trente jours.",
        "Pour la facturation, appuyez sur deux.",
        "Je vous ai envoyé une étiquette de retour par courriel.",
        "Je suis désolé, les chaussures sont arrivées abîmées.",
        "Merci de votre appel et bonne journée.",
    ),
}
ESPEAK_VOICES = {"en": "en-us", "es": "es", "de": "de", "fr": "fr-fr"}
LINES = ("16k", "8k_ulaw", "pstn")


def spoken_wer(references: list[str], hypotheses: list[str], language: str) -> float:
    """Word errors over reference words, both in spoken form, summed over the sentences."""
    from tamesu.voice.voice_metrics import word_edits

    counts = [word_edits(r, h, language=language) for r, h in zip(references, hypotheses)]
    return sum(e for e, _ in counts) / max(sum(n for _, n in counts), 1)


def through(line: str, audio: Any, seed: int) -> Any:
    """``audio`` as tamesu receives it over ``line``."""
    from tamesu.audio.codec import ulaw_decode, ulaw_encode
    from tamesu.audio.phone_line import Line
    from tamesu.audio.tts import Audio

    if line == "16k":
        return audio.resample(16000)
    narrow = audio.resample(8000)
    if line == "8k_ulaw":
        return Audio(ulaw_decode(ulaw_encode(narrow.samples)), 8000)
    return Audio(Line("pstn", seed=seed).process_signal(narrow.samples), 8000)


async def speak(voice: str, language: str, texts: tuple[str, ...]) -> list[Any]:
    from tamesu.audio.engines import get_tts

    if voice == "piper":
        tts = get_tts("piper", noise_scale=0.0, noise_w_scale=0.0)
        return [await tts.synthesize(t) for t in texts]
    tts = get_tts("espeak")
    return [await tts.synthesize(t, voice=ESPEAK_VOICES[language], language=language) for t in texts]


async def score(engine: Any, clips: list[Any], texts: tuple[str, ...], language: str) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    heard = [(await engine.transcribe(clip, language=language)).text for clip in clips]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    audio_s = sum(c.duration for c in clips)
    return {
        "wer": round(spoken_wer(list(texts), heard, language), 4),
        "audio_s": round(audio_s, 1),
        "cpu_s_per_audio_s": round(cpu / audio_s, 4),
        "wall_s_per_turn": round(wall / len(clips), 3),
        "sentences": len(clips),
        "misheard": [h for h, t in zip(heard, texts) if spoken_wer([t], [h], language) > 0][:6],
    }


async def run(quick: bool) -> dict[str, Any]:
    from tamesu.audio.engines import get_stt

    engines = {
        "whisper-tiny.en": get_stt("whisper", model="tiny.en"),
        "whisper-base": get_stt("whisper-base"),
    }
    loads = {}
    for name, engine in engines.items():
        start = time.perf_counter()
        await engine.warm()
        loads[name] = round(time.perf_counter() - start, 2)
    english = ENGLISH[::3] if quick else ENGLISH
    sets = [("piper", "en", english), ("espeak", "en", english)]
    sets += [("espeak", lang, texts[::2] if quick else texts) for lang, texts in OTHER.items()]
    rows: list[dict[str, Any]] = []
    for voice, language, texts in sets:
        spoken = await speak(voice, language, texts)
        for line in LINES:
            clips = [through(line, clip, seed=i) for i, clip in enumerate(spoken)]
            for name, engine in engines.items():
                if engine.check_language(language) is not None:
                    continue
                row = {"engine": name, "voice": voice, "language": language, "line": line}
                row |= await score(engine, clips, texts, language)
                print(json.dumps(row), flush=True)
                rows.append(row)
    return {"load_s": loads, "rows": rows, "summary": summarise(rows)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean WER and CPU per engine over English rows, per line (what the default per line reads)."""
    out: dict[str, Any] = {}
    for row in rows:
        if row["language"] != "en":
            continue
        key = f"{row['engine']} {row['line']}"
        out.setdefault(key, []).append(row)
    return {
        key: {
            "wer": round(sum(r["wer"] for r in group) / len(group), 4),
            "cpu_s_per_audio_s": round(sum(r["cpu_s_per_audio_s"] for r in group) / len(group), 4),
        }
        for key, group in sorted(out.items())
    }


def main(out: Path | None, *, quick: bool = False) -> None:
    started = os.getloadavg()
    result = {
        "machine": {
            "platform": platform.platform(),
            "cores": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in started],
            "python": platform.python_version(),
        },
        **asyncio.run(run(quick)),
    }
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    target = out or RESULTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"written to {target}")
