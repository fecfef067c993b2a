// Prints a greeting for the name given on the command line.
function greet(name) {
    if (!name) {
        name = 'world';
    }
    return "Helo, " + name;
}

console.log(greet(process.argv[2]));
