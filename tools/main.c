/* polydnn: list devices, run and time conv2d and pool2d on any device,
 * benchmark layer sets against peers, tune kernels. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: polydnn COMMAND [flags]\n\n"
            "commands:\n"
            "  devices   list the devices, TensorFlow-style\n"
            "  conv      run a 2-D convolution (MIOpenDriver-style flags)\n"
            "  pool      run a 2-D pooling\n"
            "  bench resnet50|vgg16|mobilenet|conv, bench --peak\n"
            "            time a network's convolutions and pools (or one shape) against peers,\n"
            "            or measure the device's peak; prints a Markdown table\n"
            "  tune resnet50|vgg16|mobilenet|conv\n"
            "            search the tunable kernels' parameters for a network's convolutions (or one\n"
            "            shape) on a device and store the best in the tuning cache\n"
            "  run model.onnx\n"
            "            import an ONNX model and run it (random or .npy input, top-5, time per run)\n"
            "  train     train the Deep MNIST CNN on MNIST-style data, with .npz checkpoints\n"
            "  run-example towers|cnn\n"
            "            run an example graph in a session (placement, soft placement, logs)\n\n"
            "polydnn COMMAND --help (or polydnn help COMMAND) shows a command's flags; polydnn --version the\n"
            "version. man polydnn has them all.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    /* polydnn help CMD is polydnn CMD --help (an unknown CMD is refused below). */
    char help_flag[] = "--help";
    char *help_argv[] = {argv[0], argc > 2 ? argv[2] : NULL, help_flag, NULL};
    if (strcmp(argv[1], "help") == 0 && argc > 2) {
        argc = 3;
        argv = help_argv;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("polydnn %s\n", pdnn_version());
        return 0;
    }
    if (strcmp(cmd, "devices") == 0)
        return cmd_devices(argc - 1, argv + 1);
    if (strcmp(cmd, "conv") == 0)
        return cmd_conv(argc - 1, argv + 1);
    if (strcmp(cmd, "pool") == 0)
        return cmd_pool(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "tune") == 0)
        return cmd_tune(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "train") == 0)
        return cmd_train(argc - 1, argv + 1);
    if (strcmp(cmd, "run-example") == 0)
        return cmd_example(argc - 1, argv + 1);
    fprintf(stderr, "polydnn: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
