"""Build hook for the optional C decoder; all other metadata lives in pyproject.toml.

``optional=True``: without a C compiler or Python headers the build of the extension is
skipped with a warning and kdissect runs on its generated Python decoders.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kdissect.decoders._native",
            ["kdissect/decoders/_native.c"],
            optional=True,
        )
    ]
)
