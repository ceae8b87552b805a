<?php
// The PHP reference's tracer (bench/_dynamic_reference.py), loaded as auto_prepend_file with
// Xdebug in trace and coverage modes: every function call made from a line under
// PATCHSTREAM_TRACE_ROOT (Xdebug's tracing filter is on the calling file), and the lines that
// ran there, written when the process ends.
if (getenv('PATCHSTREAM_TRACE_AUTOLOAD')) {
    // The corpus's classes first: Debian's phpunit carries its own copy of some (PHP-Parser).
    require getenv('PATCHSTREAM_TRACE_AUTOLOAD');
}
$root = rtrim(realpath(getenv('PATCHSTREAM_TRACE_ROOT')), '/') . '/';
$out = getenv('PATCHSTREAM_TRACE_OUT');
xdebug_set_filter(XDEBUG_FILTER_TRACING, XDEBUG_PATH_INCLUDE, [$root]);
xdebug_set_filter(XDEBUG_FILTER_CODE_COVERAGE, XDEBUG_PATH_INCLUDE, [$root]);
xdebug_start_code_coverage();
xdebug_start_trace($out . '.trace', XDEBUG_TRACE_NAKED_FILENAME);
register_shutdown_function(function () use ($out, $root) {
    xdebug_stop_trace();
    $ran = [];
    foreach (xdebug_get_code_coverage() as $path => $lines) {
        if (str_starts_with($path, $root)) {
            $ran[$path] = array_keys(array_filter($lines, fn ($hits) => $hits > 0));
        }
    }
    file_put_contents($out . '.lines.json', json_encode(['root' => $root, 'lines' => $ran]));
});
