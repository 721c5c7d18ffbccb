#!/usr/bin/env bash
# Runs the Curator adapter (built by build.sh); one JVM per client.
cd "$(dirname "$0")"
exec java -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$(cat classpath)" CuratorAdapter
