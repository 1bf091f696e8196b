"""The former name of `okl.synth` (synthetic streams), kept so that code using it runs."""
import sys

from okl import synth

sys.modules[__name__] = synth
