.PHONY: install dev test lint format type bench check

install:
	bash scripts/install.sh

dev:
	bash scripts/install.sh dev

test:
	python -m pytest -q

lint:
	ruff check .
	ruff format --check .

format:
	ruff format .
	ruff check --fix .

type:
	bash scripts/typecheck.sh

bench:
	python benchmarks/bench_detector.py

check: lint type test
