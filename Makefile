# lockpick — `make demo` shows a Redis lock losing mutual exclusion; `make test` runs the suite.
SHELL := /bin/bash
GO ?= go
BIN := bin/lockpick
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps deps-redis build demo test vet bench shim clean image

all: build

# deps installs redis-server, redis-sentinel, gcc, python3-redis (for examples/pylock),
# python3-etcd3 (for examples/pyetcdlock), etcd-server (etcd 3.4, for the etcd
# topologies; see docs/etcd.md), postgresql-15 (for the PostgreSQL topologies;
# see docs/postgres.md), zookeeper (ZooKeeper 3.8 and a JRE, for the ZooKeeper
# topologies; see docs/zookeeper.md), libcurator-recipes-java (Apache Curator) and
# openjdk-17-jdk-headless (javac), for examples/curatorlock, from Debian when they
# are missing.
deps: deps-redis
	@if ! command -v gcc >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq gcc >/dev/null; \
	fi
	@if ! /usr/bin/python3 -c 'import redis.lock' 2>/dev/null; then \
		echo "installing python3-redis (Debian package, for examples/pylock)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-redis >/dev/null; \
	fi
	@if ! /usr/bin/python3 -c 'import etcd3' 2>/dev/null; then \
		echo "installing python3-etcd3 (Debian package, for examples/pyetcdlock)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-etcd3 >/dev/null; \
	fi
	@if ! command -v fusermount3 >/dev/null; then \
		echo "installing fuse3 (Debian package, for the lazy disks of power-loss)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq fuse3 >/dev/null; \
	fi
	@if ! command -v etcd >/dev/null; then \
		echo "installing etcd-server (Debian package, etcd 3.4)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server >/dev/null; \
		$(SUDO) service etcd stop >/dev/null 2>&1 || true; \
	fi
	@if [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then \
		echo "installing postgresql-15 (Debian package, for the PostgreSQL topologies)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql-15 >/dev/null; \
		$(SUDO) service postgresql stop >/dev/null 2>&1 || true; \
	fi
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		echo "installing zookeeper (Debian package, ZooKeeper 3.8 and a JRE, for the ZooKeeper topologies)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq zookeeper >/dev/null; \
		$(SUDO) service zookeeper stop >/dev/null 2>&1 || true; \
	fi
	@if [ ! -f /usr/share/java/curator-recipes.jar ] || ! command -v javac >/dev/null; then \
		echo "installing libcurator-recipes-java and openjdk-17-jdk-headless (Debian packages, Apache Curator and javac, for examples/curatorlock)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libcurator-recipes-java openjdk-17-jdk-headless >/dev/null; \
	fi

# deps-redis installs only what `make demo` needs: redis-server and
# redis-sentinel.
deps-redis:
	@if ! command -v redis-server >/dev/null || ! command -v redis-sentinel >/dev/null; then \
		echo "installing redis-server and redis-sentinel (Debian packages)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server redis-sentinel >/dev/null; \
		$(SUDO) service redis-server stop >/dev/null 2>&1 || true; \
	fi

build:
	$(GO) build -o $(BIN) ./cmd/lockpick

# demo needs Redis alone: a new user's first command installs nothing else.
demo: deps-redis build
	@echo "== lockpick run failover-lock-loss --trials 3"
	@$(BIN) run failover-lock-loss --trials 3

vet:
	$(GO) vet ./...

# test runs vet and the whole suite with the race detector against real Redis nodes.
# The trial package (7 of the suite's minutes, most of it waiting on trials'
# clocks) is named first, so it starts first and the rest runs beside it, not
# after it.
test: deps vet
	$(GO) test -race -count=1 -timeout 20m ./trial $$($(GO) list ./... | grep -v '/trial$$')

# bench also times `lockpick check` of a generated 100k-event history end to
# end (start-up included; 5 runs, sorted, the median is the third), and of a
# 10M-event history (1.1 GB, written to BENCH_DIR), which it checks as a
# stream: wall time and peak RSS. The checker benchmarks print events/s for
# parsing (ReadJSONL, ScanJSONL) and checking (Check, Stream) apart, and for
# the 10M file the parse alone and parse plus check (CheckFile). Then it
# times the check of the issue-27 workloads (genhistory -ttl 60s -clean-up,
# -late 2 for two events 5ns out of time order, -crash 3 for clients that
# crash holding a lease) at 100k and 2M events.
BENCH_DIR ?= /tmp/lockpick-bench
bench: deps build
	$(GO) test ./lockcore -run '^$$' -bench AcquireReleaseRatio -benchtime 20x
	$(GO) test ./checker -run '^$$' -bench '100k' -benchtime 3x
	$(GO) test ./checker -run '^$$' -bench ReadJSONLSpeedup -benchtime 5x
	@mkdir -p $(BENCH_DIR)
	@$(GO) run ./checker/checkertest/genhistory -events 100000 -o $(BENCH_DIR)/100k.jsonl
	@echo "== lockpick check, 100k events, end to end (wall s, peak RSS KB), 5 runs sorted:"
	@for i in 1 2 3 4 5; do /usr/bin/time -f '%e s  %M KB' $(BIN) check $(BENCH_DIR)/100k.jsonl 2>&1 >/dev/null | tail -1; done | sort -n
	@[ -s $(BENCH_DIR)/10M.jsonl ] || $(GO) run ./checker/checkertest/genhistory -events 10000000 -o $(BENCH_DIR)/10M.jsonl
	@echo "== lockpick check, 10M events, streamed, end to end (wall s, peak RSS KB):"
	@/usr/bin/time -f '%e s  %M KB' $(BIN) check $(BENCH_DIR)/10M.jsonl 2>&1 >/dev/null | tail -1
	@echo "== 10M events through the parser alone (ScanJSONL), then parsed and checked (CheckFile):"
	LOCKPICK_BENCH_HISTORY=$(BENCH_DIR)/10M.jsonl $(GO) test ./checker -run '^$$' -bench 'ScanJSONLFile' -benchtime 1x
	LOCKPICK_BENCH_HISTORY=$(BENCH_DIR)/10M.jsonl $(GO) test ./checker -run '^$$' -bench 'CheckFile$$' -benchtime 1x
	@echo "== lockpick check, end to end, median of 5 (events/s and peak RSS of that run): ordered (1s leases),"
	@echo "   long leases (60s, a client releases after an unknown acquire), the same with 2 events 5ns out of time order,"
	@echo "   and with 3 clients that crash holding a lease too:"
	@for spec in "100k 100000" "100k-long 100000 -ttl 60s -clean-up" "100k-late 100000 -ttl 60s -clean-up -late 2" \
		"100k-crash 100000 -ttl 60s -clean-up -late 2 -crash 3" \
		"2M 2000000" "2M-long 2000000 -ttl 60s -clean-up" "2M-late 2000000 -ttl 60s -clean-up -late 2" \
		"2M-crash 2000000 -ttl 60s -clean-up -late 2 -crash 3"; do \
		set -- $$spec; name=$$1; n=$$2; shift 2; \
		[ -s $(BENCH_DIR)/$$name.jsonl ] || $(GO) run ./checker/checkertest/genhistory -events $$n "$$@" -o $(BENCH_DIR)/$$name.jsonl; \
		for i in 1 2 3 4 5; do /usr/bin/time -f '%e %M' $(BIN) check $(BENCH_DIR)/$$name.jsonl 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 3p | \
		awk -v name=$$name -v n=$$n '{ printf "%-10s %8d events  %6.2f s  %6.2f M events/s  %5.0f MB peak RSS\n", name, n, $$1, n/(($$1<0.01)?0.01:$$1)/1e6, $$2/1024 }'; \
	done
	@$(BIN) check $(BENCH_DIR)/2M-late.jsonl | head -1

# image builds lockpick:latest, a FROM scratch image of a static lockpick,
# this host's redis-server/redis-sentinel and the clock shim, for running
# shards on Kubernetes or CI runners (deploy/kubernetes/, docs/sharding.md).
# No registry is needed.
image: deps
	CGO_ENABLED=0 $(GO) build -o bin/lockpick-static ./cmd/lockpick
	bin/lockpick-static image --lockpick bin/lockpick-static

# shim builds the clock shim on its own (lockpick also builds it on demand).
shim:
	gcc -shared -fPIC -O2 -o bin/clockshim.so cluster/clockshim/clockshim.c

clean:
	rm -rf bin

# subjects-table runs every scenario with each subject (lockpick's locks,
# redislock, redsync, etcd-mutex, examples/extlock and examples/pylock
# through the worker protocol) and
# rewrites the subject × scenario table in docs/subjects.md. TRIALS=n per cell.
.PHONY: subjects-table
subjects-table: deps
	TRIALS=$(or $(TRIALS),1) GO=$(GO) .ci/subjects-table

# services-table runs the built-in lock services matrix (Redis locks,
# Redlock, etcd; fenced and not; under the same fault classes), TRIALS=n
# per cell (default 20), PARALLEL at once (default 2), and rewrites the
# README's table. About 20 minutes on 2 cores at the defaults.
.PHONY: services-table
services-table: deps
	TRIALS=$(or $(TRIALS),20) PARALLEL=$(or $(PARALLEL),2) GO=$(GO) .ci/services-table

# explore-demo runs the searches of docs/explore.md ("Measured here") and of
# issue 12: Redlock crash-restart, failover-lock-loss without its scripted
# faults, the fenced GC pause with client-side faults only (expected: no
# finding), and a broken external lock. About 35 minutes on 2 cores; folders
# land in results/explore/.
.PHONY: explore-demo
explore-demo: deps build
	-bin/lockpick explore redlock-baseline --faults kill,restart,pause,partition,latency,drop-replies,reset --budget 10m --parallel 2
	-bin/lockpick explore failover-lock-loss --faults kill,pause,partition,cut-replication,sentinel-failover,drop-replies,latency --budget 10m --parallel 2
	bin/lockpick explore gc-pause-fenced --faults pause-client,latency,partition,drop-replies,reset --budget 5m --parallel 2
	$(GO) build -o bin/extlock ./examples/extlock
	-bin/lockpick explore single-baseline --subject-cmd 'bin/extlock -unsafe-release' --faults pause-client,latency,drop-replies --budget 5m --parallel 2

# load-check runs the ci suite (3 trials) twice beside 2 busy loops and
# prints the wrong verdicts, the trials that missed their attack while
# counted conclusive, and the conclusive share; exit 1 on either of the
# first two. About 15 minutes on 2 cores.
.PHONY: load-check
load-check: deps build
	$(GO) run ./internal/loadcheck -lockpick $(BIN) -suite ci -trials 3 -rounds 2 -busy 2

# bench-startup compares the start-up of this tree's lockpick with that of
# BASE (a commit; default HEAD, so uncommitted changes against the last
# commit): `lockpick --version` and `lockpick check` of a 10-event history,
# RUNS runs each (default 11), the two binaries in turn so that a machine
# whose speed drifts slows both alike. It prints the medians of wall time and
# peak RSS, and the median of the per-pair ratios new/base. BASE is built in
# a temporary git worktree, so the working tree is left alone, e.g.
#   make bench-startup BASE=414853a
.PHONY: bench-startup
bench-startup:
	@mkdir -p $(BENCH_DIR)
	$(GO) build -o $(BENCH_DIR)/lockpick-new ./cmd/lockpick
	@rm -rf $(BENCH_DIR)/startup-base; git worktree prune
	git worktree add -q --detach $(BENCH_DIR)/startup-base $(or $(BASE),HEAD)
	cd $(BENCH_DIR)/startup-base && $(GO) build -o $(BENCH_DIR)/lockpick-base ./cmd/lockpick; \
		rc=$$?; cd - >/dev/null; git worktree remove --force $(BENCH_DIR)/startup-base; exit $$rc
	@echo "== start-up: base $$(git rev-parse --short $(or $(BASE),HEAD)) against this tree, $(or $(RUNS),11) runs each, in turn"
	@printf "%-36s %15s %15s %8s\n" command "base: ms, MB" "new: ms, MB" new/base
	@for args in "--version" "check checker/testdata/double-grant.jsonl"; do \
		for bin in base new; do $(BENCH_DIR)/lockpick-$$bin $$args >/dev/null 2>&1; done; \
		for i in $$(seq $(or $(RUNS),11)); do \
			for bin in base new; do \
				t0=$$EPOCHREALTIME; \
				/usr/bin/time -f %M -o $(BENCH_DIR)/startup-rss $(BENCH_DIR)/lockpick-$$bin $$args >/dev/null 2>&1; \
				t1=$$EPOCHREALTIME; \
				printf '%s %s %s ' $$t0 $$t1 $$(tail -1 $(BENCH_DIR)/startup-rss); \
			done; echo; \
		done | awk -v name="lockpick $$args" ' \
			function median(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } \
				return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 } \
			NR == 1 { sub(/checker\/testdata\//, "", name) } \
			{ n++; bw[n] = ($$2 - $$1) * 1000; bm[n] = $$3 / 1024; nw[n] = ($$5 - $$4) * 1000; nm[n] = $$6 / 1024; r[n] = nw[n] / bw[n] } \
			END { printf "%-36s %8.1f %6.1f %8.1f %6.1f %8.2f\n", name, median(bw, n), median(bm, n), median(nw, n), median(nm, n), median(r, n) }'; \
	done

# bench-explore compares explore's search strategies (docs/explore.md,
# "Guided against random"): time and schedules to the first finding, guided
# against random, the two in turn, SEEDS seeds (default 5) on each bench of
# internal/explorebench (ONLY= words of their names, e.g. ONLY=redlock,single
# or ONLY='every fault'); BUDGET per search (default 2m). About 20 minutes a
# bench on 2 cores. The three of issue 36's measure, 10 seeds, 35 minutes:
# make bench-explore SEEDS=10 ONLY='watchdog-pause (client,etcd-pause-holder (every,zk-pause-holder'
# (each prints, beside the times, the random search's first schedule with a
# pause of a client: no search that learns from its trials aims that pause
# before it has drawn it once).
.PHONY: bench-explore
bench-explore: deps
	$(GO) run ./internal/explorebench -seeds $(or $(SEEDS),5) -budget $(or $(BUDGET),2m) -only "$(ONLY)"

# reproducers runs the reproducers suite, lock bugs users reported (on the
# version they ran and on the fix, where one exists), and the scenario files
# of examples/reproducers/ (their lock programs: redsync at v4.3.0 and v4.4.1,
# examples/redsyncextend, built here first; Curator, examples/curatorlock),
# TRIALS=n trials an arm
# (default 20), one trial at a time, and rewrites the table of
# docs/reproducers.md; the run folders land in results/reproducers/. About
# 35 minutes on 2 cores at the default.
.PHONY: reproducers
reproducers: deps build
	cd examples/redsyncextend && $(GO) build -o ../../bin/redsyncextend-v4.4.1 . && \
		$(GO) build -modfile go.v4.3.0.mod -o ../../bin/redsyncextend-v4.3.0 .
	$(GO) run ./internal/reproducers -lockpick $(BIN) -trials $(or $(TRIALS),20) -doc docs/reproducers.md
