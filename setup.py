"""Build hook for the optional native (C) parts; all other metadata lives in pyproject.toml.

One extension per stage with a native part, beside that stage's Python reference: the decoder
(``decoders/_native.c``), the sources' record and header walk (``sources/_native.c``,
``sources/_headers.c``) and the native lanes: in-order reassembly (``reassembly/_native.c``)
with Kafka framing (``kafka/_framing.c``). ``optional=True``: without a C compiler or Python
headers the build of an extension is skipped with a warning and kdissect runs on its Python
path (``kdissect/native.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kdissect.decoders._native",
            ["kdissect/decoders/_native.c"],
            optional=True,
        ),
        Extension(
            "kdissect.reassembly._native",
            ["kdissect/reassembly/_native.c", "kdissect/kafka/_framing.c"],
            depends=["kdissect/kafka/_framing.h"],
            optional=True,
        ),
        Extension(
            "kdissect.sources._native",
            ["kdissect/sources/_native.c", "kdissect/sources/_headers.c"],
            depends=["kdissect/sources/_headers.h"],
            optional=True,
        ),
    ]
)
