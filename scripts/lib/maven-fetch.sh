# Jars from Maven Central for the scripts that run Java services and tools (scripts/cassandra.sh,
# scripts/hadoop.sh); sourced. Functions:
#   maven_fetch POM DIR VERSION   the runtime dependencies of POM into DIR (once per VERSION: a stamp file
#                                 DIR/.complete-VERSION marks a finished fetch)
maven_fetch() {
  local pom="$1" dir="$2" version="$3"
  if [ -f "$dir/.complete-$version" ]; then return 0; fi
  mkdir -p "$dir"
  mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dir" -DincludeScope=runtime
  touch "$dir/.complete-$version"
}
