# SPDX-License-Identifier: GPL-2.0-only
"""The parts of bench/run (`make bench`): common holds what its sections
share."""
