
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'tritonctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'tritonctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'tritonctl' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Check config.pbtxt files, model directories and model repositories the way Triton does when it loads them')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Print the documentation of a rule')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('fmt', 'fmt', [CompletionResultType]::ParameterValue, 'Rewrite config.pbtxt files in one canonical layout, comments kept')
            [CompletionResult]::new('convert', 'convert', [CompletionResultType]::ParameterValue, 'Convert a config between text format and Triton''s JSON form')
            [CompletionResult]::new('autoconfig', 'autoconfig', [CompletionResultType]::ParameterValue, 'Print the config Triton''s ONNX Runtime backend auto-completes for an ONNX model')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Replay a trace of requests through a model''s scheduler on a virtual clock')
            [CompletionResult]::new('trace', 'trace', [CompletionResultType]::ParameterValue, 'Make request traces for `simulate`')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Report what this machine offers the local runner: ONNX Runtime, execution providers, CUDA driver and devices')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a model locally with ONNX Runtime, batched by the same scheduler code as `simulate`, on a real clock')
            [CompletionResult]::new('perf', 'perf', [CompletionResultType]::ParameterValue, 'Load-test a model on a running KServe v2 / Triton server (closed or open loop, latency from the intended send time)')
            break
        }
        'tritonctl;validate' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--allow', '--allow', [CompletionResultType]::ParameterName, 'Drop the findings of a rule (code or name; repeatable)')
            [CompletionResult]::new('--deny', '--deny', [CompletionResultType]::ParameterName, 'Report the findings of a rule as errors (code or name; repeatable)')
            [CompletionResult]::new('--platform-default', '--platform-default', [CompletionResultType]::ParameterName, 'Platform assumed when a config names neither platform nor backend and no model file reveals it')
            [CompletionResult]::new('--known-backend', '--known-backend', [CompletionResultType]::ParameterName, 'A backend installed on the target server besides Triton''s standard ones (repeatable)')
            [CompletionResult]::new('--gpus', '--gpus', [CompletionResultType]::ParameterName, 'GPU ids of the target server, comma-separated (default: none, a CPU-only server)')
            [CompletionResult]::new('--min-compute-capability', '--min-compute-capability', [CompletionResultType]::ParameterName, 'The target server''s minimum supported CUDA compute capability')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE instead of the tritonctl.toml found by walking up from each path')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Warnings count as errors')
            [CompletionResult]::new('--disable-auto-complete-config', '--disable-auto-complete-config', [CompletionResultType]::ParameterName, 'Validate as a server started with --disable-auto-complete-config does: configs must be complete, a missing config.pbtxt is an error')
            [CompletionResult]::new('--exit-zero', '--exit-zero', [CompletionResultType]::ParameterName, 'Exit 0 even when there are error findings')
            [CompletionResult]::new('--no-config', '--no-config', [CompletionResultType]::ParameterName, 'Ignore tritonctl.toml files')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;explain' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'List every rule')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;completions' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;fmt' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Write nothing; list the files that would change and exit 1 if any')
            [CompletionResult]::new('--diff', '--diff', [CompletionResultType]::ParameterName, 'Write nothing; print a unified diff of the changes and exit 1 if any')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;convert' {
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;autoconfig' {
            [CompletionResult]::new('--max-batch-size', '--max-batch-size', [CompletionResultType]::ParameterName, 'Triton''s default-max-batch-size: the max_batch_size given to a model that can batch when the config sets none (0 disables batching)')
            [CompletionResult]::new('--default-max-batch-size', '--default-max-batch-size', [CompletionResultType]::ParameterName, 'Triton''s default-max-batch-size: the max_batch_size given to a model that can batch when the config sets none (0 disables batching)')
            [CompletionResult]::new('--merge', '--merge', [CompletionResultType]::ParameterName, 'Complete this partial config the way Triton does (fails with Triton''s message where it contradicts the model); `-` reads standard input')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--gpus', '--gpus', [CompletionResultType]::ParameterName, 'GPU ids of the target server, comma-separated (default: none, a CPU-only server); decides the instance group of --full')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--write', '--write', [CompletionResultType]::ParameterName, 'Write config.pbtxt into the model directory instead of printing it')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'With --write: replace an existing config.pbtxt')
            [CompletionResult]::new('--full', '--full', [CompletionResultType]::ParameterName, 'Print everything Triton reports for the model (version policy, instance groups, pinned memory, ...), not only what auto-complete adds')
            [CompletionResult]::new('--minimal', '--minimal', [CompletionResultType]::ParameterName, 'Print only what auto-complete adds to the config (the default): name, platform and backend, max_batch_size, input, output, dynamic_batching')
            [CompletionResult]::new('--triton-compatible', '--triton-compatible', [CompletionResultType]::ParameterName, 'Do as Triton does even where it fails: list sequence control and state tensors as ordinary inputs and outputs')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;simulate' {
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'The model''s config.pbtxt, or its model directory. For an ensemble, its model directory in the model repository (REPO/ENSEMBLE): the composing models are read from the same repository')
            [CompletionResult]::new('--trace', '--trace', [CompletionResultType]::ParameterName, 'The trace (JSON Lines); `-` reads standard input')
            [CompletionResult]::new('--latency', '--latency', [CompletionResultType]::ParameterName, 'Execution time of one batch by size: "1:2000,2:2400,4:3100" (µs, interpolated linearly), "2000+150*b", or a file holding either. For an ensemble, repeatable: MODEL=SPEC for one composing model, a SPEC without MODEL= for every composing model not named')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Also draw the run as an SVG picture in FILE: time to the right, one lane per instance and slot (sequence batching) or per instance, one box per execution, coloured by sequence (or shaded by batch size)')
            [CompletionResult]::new('--timeline-window', '--timeline-window', [CompletionResultType]::ParameterName, 'Draw only the executions that overlap this time range, in µs of the trace''s clock; either end may be left out ("5000:")')
            [CompletionResult]::new('--timeline-max-batches', '--timeline-max-batches', [CompletionResultType]::ParameterName, 'Draw at most N executions, the first ones (of the window); the picture says when some were left out')
            [CompletionResult]::new('--sweep', '--sweep', [CompletionResultType]::ParameterName, 'Run the trace once per value of a config field and print one summary row per setting. KEY is a field path in the model config (dynamic_batching.max_queue_delay_microseconds, max_batch_size, instance_group[0].count, sequence_batching.oldest.max_candidate_sequences, ...); values are comma-separated, in config syntax ("[4,8]" for a list; strings need no quotes). Repeatable: every combination is run (at most 1000)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--timeline-queue', '--timeline-queue', [CompletionResultType]::ParameterName, 'Also draw each executed request''s queue wait (arrival to start of its execution) as a thin bar under the execution')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;trace' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Write a synthetic trace (JSON Lines, sorted by arrival); the same options and seed give the same bytes')
            break
        }
        'tritonctl;trace;generate' {
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'Requests per second (with --sequences: sequence starts per second)')
            [CompletionResult]::new('--distribution', '--distribution', [CompletionResultType]::ParameterName, 'Inter-arrival times')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Only arrivals in the first S seconds')
            [CompletionResult]::new('--requests', '--requests', [CompletionResultType]::ParameterName, 'At most N requests')
            [CompletionResult]::new('--sequences', '--sequences', [CompletionResultType]::ParameterName, 'Group the requests into N sequences (START on the first step, END on the last)')
            [CompletionResult]::new('--sequence-length', '--sequence-length', [CompletionResultType]::ParameterName, 'Mean number of requests per sequence')
            [CompletionResult]::new('--sequence-length-variation', '--sequence-length-variation', [CompletionResultType]::ParameterName, 'Sequence lengths vary uniformly by up to this many percent')
            [CompletionResult]::new('--think-time-us', '--think-time-us', [CompletionResultType]::ParameterName, 'Microseconds between the steps of a sequence')
            [CompletionResult]::new('--priority-levels', '--priority-levels', [CompletionResultType]::ParameterName, 'Give each request a random priority 1..=K')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the random generator')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write to FILE instead of standard output')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write to FILE instead of standard output')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--string-ids', '--string-ids', [CompletionResultType]::ParameterName, 'Sequence ids as strings ("s1") instead of integers')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;doctor' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: human (default) or json (one object; fields in the documentation of `tritonctl::commands::doctor`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;run' {
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Requests: perf_analyzer''s input-data JSON, or JSON Lines of requests; `-` reads standard input')
            [CompletionResult]::new('--input', '--input', [CompletionResultType]::ParameterName, 'Requests: perf_analyzer''s input-data JSON, or JSON Lines of requests; `-` reads standard input')
            [CompletionResult]::new('--device', '--device', [CompletionResultType]::ParameterName, 'Execution device: `cpu`, `cuda` or `cuda:N`; default cuda when a CUDA device and ONNX Runtime''s CUDA execution provider are present')
            [CompletionResult]::new('--model-version', '--model-version', [CompletionResultType]::ParameterName, 'Model version to run (default: the highest numeric version directory)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Measure the execution time per batch size and write a latency file that `simulate --latency` reads')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--sequence', '--sequence', [CompletionResultType]::ParameterName, 'Stateful mode: fill the sequence control inputs and keep state per sequence (each top-level array of perf_analyzer''s input data is one sequence)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'tritonctl;perf' {
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Model name')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model name')
            [CompletionResult]::new('-x', '-x', [CompletionResultType]::ParameterName, 'Model version (default: the server''s choice)')
            [CompletionResult]::new('--model-version', '--model-version', [CompletionResultType]::ParameterName, 'Model version (default: the server''s choice)')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Server address, HOST:PORT or http://HOST:PORT; repeat to spread the load over several servers (connections and open-loop sends go round-robin). Default: localhost:8000, with `-i grpc` localhost:8001')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Server address, HOST:PORT or http://HOST:PORT; repeat to spread the load over several servers (connections and open-loop sends go round-robin). Default: localhost:8000, with `-i grpc` localhost:8001')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Protocol')
            [CompletionResult]::new('--protocol', '--protocol', [CompletionResultType]::ParameterName, 'Protocol')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Extra HTTP header `Name:Value` on every request (repeatable)')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Extra HTTP header `Name:Value` on every request (repeatable)')
            [CompletionResult]::new('--concurrency-range', '--concurrency-range', [CompletionResultType]::ParameterName, 'Closed loop: keep N requests outstanding, for N from START to END by STEP (`START[:END[:STEP]]`). The default load is concurrency 1')
            [CompletionResult]::new('--request-rate-range', '--request-rate-range', [CompletionResultType]::ParameterName, 'Open loop: send at R requests per second, for R from START to END by STEP; latency counts from the scheduled send time')
            [CompletionResult]::new('--request-intervals', '--request-intervals', [CompletionResultType]::ParameterName, 'Open loop with the gaps of FILE (perf_analyzer''s format: one gap in microseconds per line, replayed cyclically)')
            [CompletionResult]::new('--request-distribution', '--request-distribution', [CompletionResultType]::ParameterName, 'Gaps between open-loop sends')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the Poisson schedule and of random input data')
            [CompletionResult]::new('--max-concurrency', '--max-concurrency', [CompletionResultType]::ParameterName, 'Open loop: at most N requests in flight; a send that has to wait for a free slot is late')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Length of a measurement window in milliseconds. Without `--duration` or `--request-count` a level is measured in such windows until the last 3 are stable (or `--max-trials`)')
            [CompletionResult]::new('--measurement-interval', '--measurement-interval', [CompletionResultType]::ParameterName, 'Length of a measurement window in milliseconds. Without `--duration` or `--request-count` a level is measured in such windows until the last 3 are stable (or `--max-trials`)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Stability windows: the last 3 windows'' throughputs and mean latencies may differ by this many percent (max/min <= 1 + P/100)')
            [CompletionResult]::new('--stability-percentage', '--stability-percentage', [CompletionResultType]::ParameterName, 'Stability windows: the last 3 windows'' throughputs and mean latencies may differ by this many percent (max/min <= 1 + P/100)')
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Stability windows: at most this many windows per level; a level that is not stable by then is reported with `stable: false`')
            [CompletionResult]::new('--max-trials', '--max-trials', [CompletionResultType]::ParameterName, 'Stability windows: at most this many windows per level; a level that is not stable by then is reported with `stable: false`')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Length of the measurement window in seconds (overrides `--measurement-interval`)')
            [CompletionResult]::new('--request-count', '--request-count', [CompletionResultType]::ParameterName, 'Measure exactly N requests per level instead of a time window')
            [CompletionResult]::new('--warmup', '--warmup', [CompletionResultType]::ParameterName, 'Seconds of load before each level''s measurement starts (not counted)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Per-request timeout in milliseconds (a timed-out request is an error of kind `timeout`)')
            [CompletionResult]::new('--max-response-bytes', '--max-response-bytes', [CompletionResultType]::ParameterName, 'The largest response body read, in bytes (a larger one is refused unread or cut off at the limit). Default: 16 MiB for the metadata, config and statistics endpoints, and for inference 4 times the outputs'' size at the batch size sent, at least 64 MiB')
            [CompletionResult]::new('--max-input-bytes', '--max-input-bytes', [CompletionResultType]::ParameterName, 'The largest input tensor built, in bytes as sent (elements times element size; 32 bytes per element as JSON), checked before it is allocated (suffixes K, M, G as for --max-file-bytes)')
            [CompletionResult]::new('--input-data', '--input-data', [CompletionResultType]::ParameterName, 'Input values: `random` (seeded), `zero`, or a JSON file in perf_analyzer''s format (`{"data": [{"INPUT": [..]}, ...]}`, values also as `{"content": [..], "shape": [..]}` or `{"b64": ".."}`; for sequence models `data` may be a list of streams, one per sequence)')
            [CompletionResult]::new('--shape', '--shape', [CompletionResultType]::ParameterName, 'Shape of an input without the batch dimension, `NAME:D1,D2` (needed for variable dims; repeatable)')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Batch size of every request')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Batch size of every request')
            [CompletionResult]::new('--input-tensor-format', '--input-tensor-format', [CompletionResultType]::ParameterName, 'Input tensor encoding over HTTP (default: binary when the server advertises the `binary_tensor_data` extension, else json)')
            [CompletionResult]::new('--output-tensor-format', '--output-tensor-format', [CompletionResultType]::ParameterName, 'Output tensor encoding requested over HTTP (default as for `--input-tensor-format`)')
            [CompletionResult]::new('--max-error-rate', '--max-error-rate', [CompletionResultType]::ParameterName, 'Exit with status 1 when the share of failed requests in any level is above this (0 to 1)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Also write perf_analyzer''s CSV columns to FILE (Model Analyzer reads it)')
            [CompletionResult]::new('--csv', '--csv', [CompletionResultType]::ParameterName, 'Also write perf_analyzer''s CSV columns to FILE (Model Analyzer reads it)')
            [CompletionResult]::new('--sequence-length', '--sequence-length', [CompletionResultType]::ParameterName, 'Sequence models (detected from the config): requests per sequence (default 20, or the length of the data streams of `--input-data`)')
            [CompletionResult]::new('--sequence-length-variation', '--sequence-length-variation', [CompletionResultType]::ParameterName, 'Sequence models: each sequence''s length is drawn uniformly within ±P % of `--sequence-length` (at least 1; seeded by `--seed`)')
            [CompletionResult]::new('--sequence-id-prefix', '--sequence-id-prefix', [CompletionResultType]::ParameterName, 'Sequence models: send string sequence ids, PREFIX followed by the number (the model must use a string CORRID)')
            [CompletionResult]::new('--sequence-id-range', '--sequence-id-range', [CompletionResultType]::ParameterName, 'Sequence ids `START[:END]` (END exclusive; ids wrap around). The default starts at a random base so that two runs do not collide')
            [CompletionResult]::new('--num-of-sequences', '--num-of-sequences', [CompletionResultType]::ParameterName, 'Open loop, sequence models: sequences live at once (each has at most one request in flight)')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Live progress bar on standard error: `auto` when it is a terminal, `always`, or `never`')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour in human output (NO_COLOR turns off `auto`)')
            [CompletionResult]::new('--max-file-bytes', '--max-file-bytes', [CompletionResultType]::ParameterName, 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit')
            [CompletionResult]::new('--streaming', '--streaming', [CompletionResultType]::ParameterName, 'gRPC only: send requests over bidirectional `ModelStreamInfer` streams (one per request in flight) instead of unary calls')
            [CompletionResult]::new('--batched', '--batched', [CompletionResultType]::ParameterName, 'Model without the config endpoint (plain KServe v2 servers): the first metadata dim is a batch dim')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only the findings: no summary, no progress')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also report what was checked (on standard error)')
            [CompletionResult]::new('--follow-symlinks', '--follow-symlinks', [CompletionResultType]::ParameterName, 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
