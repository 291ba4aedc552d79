
use builtin;
use str;

set edit:completion:arg-completer[tritonctl] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'tritonctl'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'tritonctl'= {
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand validate 'Check config.pbtxt files, model directories and model repositories the way Triton does when it loads them'
            cand explain 'Print the documentation of a rule'
            cand completions 'Print a shell completion script'
            cand fmt 'Rewrite config.pbtxt files in one canonical layout, comments kept'
            cand convert 'Convert a config between text format and Triton''s JSON form'
            cand autoconfig 'Print the config Triton''s ONNX Runtime backend auto-completes for an ONNX model'
            cand simulate 'Replay a trace of requests through a model''s scheduler on a virtual clock'
            cand trace 'Make request traces for `simulate`'
            cand doctor 'Report what this machine offers the local runner: ONNX Runtime, execution providers, CUDA driver and devices'
            cand run 'Run a model locally with ONNX Runtime, batched by the same scheduler code as `simulate`, on a real clock'
        }
        &'tritonctl;validate'= {
            cand --format 'Output format'
            cand --allow 'Drop the findings of a rule (code or name; repeatable)'
            cand --deny 'Report the findings of a rule as errors (code or name; repeatable)'
            cand --platform-default 'Platform assumed when a config names neither platform nor backend and no model file reveals it'
            cand --known-backend 'A backend installed on the target server besides Triton''s standard ones (repeatable)'
            cand --gpus 'GPU ids of the target server, comma-separated (default: none, a CPU-only server)'
            cand --min-compute-capability 'The target server''s minimum supported CUDA compute capability'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --strict 'Warnings count as errors'
            cand --disable-auto-complete-config 'Validate as a server started with --disable-auto-complete-config does: configs must be complete, a missing config.pbtxt is an error'
            cand --exit-zero 'Exit 0 even when there are error findings'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;explain'= {
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --all 'List every rule'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;completions'= {
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;fmt'= {
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --check 'Write nothing; list the files that would change and exit 1 if any'
            cand --diff 'Write nothing; print a unified diff of the changes and exit 1 if any'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;convert'= {
            cand --to 'Output format'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;autoconfig'= {
            cand --max-batch-size 'Triton''s default-max-batch-size: the max_batch_size given to a model that can batch when the config sets none (0 disables batching)'
            cand --default-max-batch-size 'Triton''s default-max-batch-size: the max_batch_size given to a model that can batch when the config sets none (0 disables batching)'
            cand --merge 'Complete this partial config the way Triton does (fails with Triton''s message where it contradicts the model); `-` reads standard input'
            cand --format 'Output format'
            cand --gpus 'GPU ids of the target server, comma-separated (default: none, a CPU-only server); decides the instance group of --full'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --write 'Write config.pbtxt into the model directory instead of printing it'
            cand --force 'With --write: replace an existing config.pbtxt'
            cand --full 'Print everything Triton reports for the model (version policy, instance groups, pinned memory, ...), not only what auto-complete adds'
            cand --minimal 'Print only what auto-complete adds to the config (the default): name, platform and backend, max_batch_size, input, output, dynamic_batching'
            cand --triton-compatible 'Do as Triton does even where it fails: list sequence control and state tensors as ordinary inputs and outputs'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;simulate'= {
            cand --config 'The model''s config.pbtxt, or its model directory'
            cand --trace 'The trace (JSON Lines); `-` reads standard input'
            cand --latency 'Execution time of one batch by size: "1:2000,2:2400,4:3100" (µs, interpolated linearly), "2000+150*b", or a file holding either'
            cand --format 'Output format'
            cand --timeline 'Also draw the run as an SVG picture in FILE: time to the right, one lane per instance and slot (sequence batching) or per instance, one box per execution, coloured by sequence (or shaded by batch size)'
            cand --timeline-window 'Draw only the executions that overlap this time range, in µs of the trace''s clock; either end may be left out ("5000:")'
            cand --timeline-max-batches 'Draw at most N executions, the first ones (of the window); the picture says when some were left out'
            cand --sweep 'Run the trace once per value of a config field and print one summary row per setting. KEY is a field path in the model config (dynamic_batching.max_queue_delay_microseconds, max_batch_size, instance_group[0].count, sequence_batching.oldest.max_candidate_sequences, ...); values are comma-separated, in config syntax ("[4,8]" for a list; strings need no quotes). Repeatable: every combination is run (at most 1000)'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --timeline-queue 'Also draw each executed request''s queue wait (arrival to start of its execution) as a thin bar under the execution'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;trace'= {
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand generate 'Write a synthetic trace (JSON Lines, sorted by arrival); the same options and seed give the same bytes'
        }
        &'tritonctl;trace;generate'= {
            cand --rate 'Requests per second (with --sequences: sequence starts per second)'
            cand --distribution 'Inter-arrival times'
            cand --duration 'Only arrivals in the first S seconds'
            cand --requests 'At most N requests'
            cand --sequences 'Group the requests into N sequences (START on the first step, END on the last)'
            cand --sequence-length 'Mean number of requests per sequence'
            cand --sequence-length-variation 'Sequence lengths vary uniformly by up to this many percent'
            cand --think-time-us 'Microseconds between the steps of a sequence'
            cand --priority-levels 'Give each request a random priority 1..=K'
            cand --seed 'Seed of the random generator'
            cand -o 'Write to FILE instead of standard output'
            cand --output 'Write to FILE instead of standard output'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --string-ids 'Sequence ids as strings ("s1") instead of integers'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;doctor'= {
            cand --format 'Output format: human (default) or json (one object; fields in the documentation of `tritonctl::commands::doctor`)'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'tritonctl;run'= {
            cand -i 'Requests: perf_analyzer''s input-data JSON, or JSON Lines of requests; `-` reads standard input'
            cand --input 'Requests: perf_analyzer''s input-data JSON, or JSON Lines of requests; `-` reads standard input'
            cand --device 'Execution device: `cpu`, `cuda` or `cuda:N`; default cuda when a CUDA device and ONNX Runtime''s CUDA execution provider are present'
            cand --model-version 'Model version to run (default: the highest numeric version directory)'
            cand --format 'Output format'
            cand --profile 'Measure the execution time per batch size and write a latency file that `simulate --latency` reads'
            cand --color 'When to use colour in human output (NO_COLOR turns off `auto`)'
            cand --sequence 'Stateful mode: fill the sequence control inputs and keep state per sequence (each top-level array of perf_analyzer''s input data is one sequence)'
            cand -q 'Print only the findings: no summary, no progress'
            cand --quiet 'Print only the findings: no summary, no progress'
            cand -v 'Also report what was checked (on standard error)'
            cand --verbose 'Also report what was checked (on standard error)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
