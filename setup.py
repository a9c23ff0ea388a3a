"""Build hook for the optional native (C) parts; all other metadata lives in pyproject.toml.

One extension per stage with a native part, beside that stage's Python reference: the decoder
(``decoders/_native.c``), the sources' record walks and header read (``sources/_native.c`` and
the files it names), the engines' two (the live engine's device read, ``engines/_capture.c``; the command
line's heap setting, ``engines/_heap.c``), the table sink's detail walk,
records rows, category codes, text spans, typed columns and partition rows (``tables/_native.c``, ``_record_rows.c``,
``_codes.c``, ``_spans.c``,
``_typed.c``, ``_part_rows.c``), and the native lanes:
in-order reassembly (``reassembly/_native.c``) with Kafka framing (``kafka/_framing.c``).
``optional=True``: without a C compiler or Python headers the build of an extension is skipped
with a warning and kdissect runs on its Python path (``kdissect/native.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kdissect.decoders._native",
            ["kdissect/decoders/_native.c"],
            depends=["kdissect/decoders/_scan.h", "kdissect/decoders/_records.h"],
            optional=True,
        ),
        Extension(
            "kdissect.reassembly._native",
            ["kdissect/reassembly/_native.c", "kdissect/kafka/_framing.c", "kdissect/kafka/_pairing.c",
             "kdissect/kafka/_details.c"],
            depends=["kdissect/kafka/_framing.h", "kdissect/kafka/_pairing.h", "kdissect/kafka/_details.h",
                     "kdissect/decoders/_scan.h", "kdissect/tables/_native.h", "kdissect/tables/_typed.h",
                     "kdissect/tables/_part_rows.h",
                     "kdissect/sources/_segment_layout.h"],
            optional=True,
        ),
        Extension(
            "kdissect.sources._native",
            [
                "kdissect/sources/_native.c",
                "kdissect/sources/_pcapng.c",
                "kdissect/sources/_batch.c",
                "kdissect/sources/_segments.c",
                "kdissect/sources/_runs.c",
                "kdissect/sources/_headers.c",
                "kdissect/sources/_payload_cut.c",
            ],
            depends=["kdissect/sources/_headers.h", "kdissect/sources/_segments.h",
                     "kdissect/sources/_segment_layout.h"],
            optional=True,
        ),
        Extension(
            "kdissect.tables._native",
            ["kdissect/tables/_native.c", "kdissect/tables/_record_rows.c", "kdissect/tables/_codes.c",
             "kdissect/tables/_typed.c", "kdissect/tables/_walk_bytes.c", "kdissect/tables/_part_rows.c",
             "kdissect/tables/_spans.c"],
            depends=["kdissect/tables/_native.h", "kdissect/tables/_record_rows.h", "kdissect/tables/_codes.h",
                     "kdissect/tables/_typed.h", "kdissect/tables/_walk.h", "kdissect/tables/_part_rows.h",
                     "kdissect/tables/_spans.h",
                     "kdissect/decoders/_records.h", "kdissect/decoders/_scan.h"],
            optional=True,
        ),
        Extension(
            "kdissect.engines._capture",
            ["kdissect/engines/_capture.c"],
            optional=True,
        ),
        Extension(
            "kdissect.engines._heap",
            ["kdissect/engines/_heap.c"],
            optional=True,
        ),
    ]
)
