"""Build time: schema/agent.proto compiled into the stubs of this package (needs grpcio-tools).

    python -m tamesu.targets.grpc.grpc_stubs.compile_proto

protoc writes ``import agent_pb2`` in the service module; it becomes a relative import so the
stubs work from inside the package. The checked-in stubs come from grpcio-tools 1.78 (protobuf
gencode 6.31.1): they need grpcio >= 1.78 and protobuf >= 6.31.1, as the grpc extra says.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

__all__ = ["HERE", "PROTO", "generate", "stubs"]

HERE = Path(__file__).parent
PROTO = Path(__file__).resolve().parents[4] / "schema" / "agent.proto"
FILES = ("agent_pb2.py", "agent_pb2.pyi", "agent_pb2_grpc.py")


def stubs(proto: Path = PROTO) -> dict[str, str]:
    """File name -> text of the stubs compiled from ``proto``."""
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "protoc",
            f"-I{proto.parent}",
            f"-I{include}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            str(proto),
        ]
        if protoc.main(argv) != 0:
            raise RuntimeError(f"protoc failed on {proto}")
        texts = {name: (Path(out) / name).read_text() for name in FILES}
    texts["agent_pb2_grpc.py"] = texts["agent_pb2_grpc.py"].replace(
        "\nimport agent_pb2 as agent__pb2\n", "\nfrom . import agent_pb2 as agent__pb2\n"
    )
    return texts


def generate() -> None:
    for name, text in stubs().items():
        (HERE / name).write_text(text)
        print(f"wrote {HERE / name}", file=sys.stderr)


if __name__ == "__main__":
    generate()
