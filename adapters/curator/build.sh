#!/usr/bin/env bash
# Builds the Curator adapter from Debian's Curator 5.4 jars (libcurator-recipes-java), which
# scripts/install-deps installs; writes classes/ and classpath (read by run.sh).
set -euo pipefail
cd "$(dirname "$0")"
bash ../../scripts/install-deps libcurator-recipes-java libcurator-framework-java libslf4j-java default-jdk-headless
cp=""
for j in curator-client curator-framework curator-recipes zookeeper zookeeper-jute guava slf4j-api slf4j-nop netty-all failureaccess; do
  f=/usr/share/java/$j.jar
  [ -f "$f" ] && cp="$cp${cp:+:}$f"
done
mkdir -p classes
javac -nowarn -cp "$cp" -d classes CuratorAdapter.java
echo "classes:$cp" > classpath
